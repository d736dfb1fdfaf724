// Book-keeping of a run, free of actor code: folds step completions, per-worker timings and
// evaluation shards into metrics.jsonl records (core/metrics/records.hpp), progress snapshots
// and the final run_report. The run driver feeds it (the ensemble loop too); tests can feed it
// directly.
//
// Thread safety: none; owned by the run driver.
#pragma once

#include "core/metrics/jsonl_writer.hpp"
#include "core/metrics/metrics_budget.hpp"
#include "core/metrics/record_windows.hpp"
#include "core/metrics/records.hpp"
#include "core/policy/step_rules.hpp"
#include "core/train/failure_log.hpp"
#include "core/train/progress.hpp"
#include "core/train/run_report.hpp"
#include "core/train/stage_windows.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <vector>

namespace troupe {

/// What a run's records say beyond the steps: which set evaluations use, and the learning rate.
struct tracker_options {
  bool validation = false;  ///< evaluations use the validation set (else the test set)
  /// The evaluations' metric (core/train/loss.hpp metric_name): "accuracy", "mse" or "mae".
  /// The tracker's and report's *_accuracy figures hold its values.
  std::string metric = "accuracy";
  std::function<double(int64_t step)> learning_rate;  ///< recorded with each step; may be empty
  /// How big metrics.jsonl may grow before per-step records are summed over windows.
  metrics_budget budget;
  /// The workers' step numbers are the run's (sync, local_sgd, schedules, pipelines): a timing
  /// of a step the run has not completed is held aside (checkpoints and the summary count the
  /// completed steps). false under async, whose workers count their own pushes.
  bool lockstep = true;
};

class run_tracker {
 public:
  /// `workers` report figures (replicas, or replicas x stages); `metrics` may be null.
  run_tracker(int64_t workers, const step_rules& rules, jsonl_writer* metrics,
              tracker_options options = {});

  /// Restarts the wall clock (call when the first step is handed out).
  void start();
  /// Seconds since start().
  double elapsed_s() const;

  /// A step completed with these parts (in worker order). Its duration is the parts' longest
  /// span_s, or the time since the last step completed here when none has one. Its rows are
  /// what the sum the parts applied held where they say (step_part::sum_rows), else the parts'
  /// samples; they count towards the epoch of the step, or of the batch a part names
  /// (step_part::batch), in rows_per_epoch. Returns the progress
  /// snapshot.
  progress_update on_step_complete(int64_t step, const std::vector<step_part>& parts,
                                   double reduce_s);
  /// The last completed step's duration (as on_step_complete measured it); 0 before one.
  double last_step_s() const { return last_step_s_; }

  /// A worker's timings for a step it applied; `data_wait_s`: waiting for its batch's rows.
  void on_worker_step(int64_t worker, int64_t step, double compute_s, double comm_s, double apply_s,
                      double data_wait_s = 0);

  /// fp16: a worker's loss scale after `step` and its skipped steps so far. A scale that
  /// differs from the worker's last one (or its first) is written as a loss_scale record.
  void on_loss_scale(int64_t worker, int64_t step, double scale, int64_t skipped_steps);

  /// One worker's evaluation shard, with its confusion counts for a classification (else
  /// empty). Returns a snapshot once `expected` shards of `step` are in. Throws
  /// std::invalid_argument for counts that do not match the other shards'.
  std::optional<progress_update> on_eval_shard(int64_t worker, int64_t step, double loss_sum,
                                               double metric_sum, int64_t count, double eval_s,
                                               int64_t expected,
                                               const std::vector<int64_t>& confusion = {});
  /// The confusion record of the latest complete evaluation with counts, written once: the
  /// run's final evaluation (core/run/run_ending). Nothing when there is none.
  void record_last_confusion();
  /// A run with a validation set: the test set's one evaluation, of the weights the run kept
  /// (`weights`: "final" or "best", those after `step`).
  void on_test_evaluation(int64_t step, const std::string& weights, double loss_sum,
                          double metric_sum, int64_t count, double eval_s);
  /// The loss and accuracy of the latest complete evaluation (validation or test, as the
  /// options say); nothing before the first.
  std::optional<std::pair<double, double>> latest_evaluation() const;
  /// Whether the evaluation after `step` is complete and recorded.
  bool evaluated(int64_t step) const { return last_evaluated_ && *last_evaluated_ >= step; }

  /// local SGD, a replica lost: `rows` more (or, negative, fewer) of `step` are in the weights
  /// than its completion counted (act::recount).
  void recount(int64_t step, int64_t rows);
  /// The rows each epoch's completed steps trained into the weights so far (index: epoch).
  const std::vector<int64_t>& rows_per_epoch() const { return rows_per_epoch_; }

  /// async: a gradient of `worker`'s step `step` was applied, making `version`.
  void on_applied(int64_t worker, int64_t step, int64_t version, int64_t staleness);
  /// async: `worker` was held back `wait_s` by the staleness bound.
  void on_waited(int64_t worker, int64_t step, double wait_s);

  /// Pipelines: how workers form pipelines, and the ideal bubble fraction reported beside the
  /// measured one. Call before the first stage timing.
  void set_pipelines(int64_t pipelines, int64_t stages, double predicted_bubble);
  /// Pipelines: a stage's timing of a step; once every stage of the step is in, writes each
  /// one's worker_step and stage_step records in worker order.
  void on_stage_timing(const stage_timing& t);

  /// A record stamped with the time since start (phase, failure, member_eval).
  template <class Record>
  void record(Record r) {
    r.t = elapsed_s();
    write(to_json(r));
  }

  /// Lost nodes, regroups and joins (cluster.on_node_loss "continue"): the summary's
  /// "failures" come from here; each completed step may end a recovery.
  failure_log& failures() { return failures_; }
  /// An evaluation round left incomplete by a lost worker: what came is recorded as a partial
  /// evaluation (`"partial": true`), or, with `redo`, dropped so that it can be done again.
  void close_eval_round(int64_t step, bool redo);
  /// The steps whose evaluation rounds have shards but are not complete.
  std::vector<int64_t> open_eval_rounds() const;

  /// Writes the per-step records still summed in open windows (the run ends).
  void flush_records() { windows_.flush(); }

  /// Its figures so far, for a checkpoint (run_tracker_state.cpp).
  nlohmann::json save() const;
  /// `saved` (what save() returned when a step completed) with the evaluation's figures and the
  /// clock as they are now, its counts left at that step's: the steps after it may have
  /// completed while it was evaluated (async), and a checkpoint counts what its weights hold.
  void add_evaluation_to(nlohmann::json& saved) const;
  /// A resumed run: carries on from the figures save() returned, its clock included.
  void restore(const nlohmann::json& saved);
  /// The report of the run so far; `error` empty means it succeeded.
  run_report report(const std::string& error, at::Tensor final_weights) const;

 private:
  struct eval_round {
    int64_t expected = 0;
    double loss_sum = 0;
    double metric_sum = 0;
    int64_t count = 0;
    int64_t shards = 0;
    double max_eval_s = 0;
    std::vector<int64_t> confusion;
  };

  /// A worker's timing of a step the run has not completed yet (replicas run ahead of the
  /// slowest): a checkpoint holds the weights of the steps completed, and the summary counts
  /// those, so both leave these out (a resumed run, which does the steps again, counted them
  /// twice; an early stop counted one the run never took).
  struct step_ahead {
    int64_t worker = 0;
    double compute_s = 0;
    double comm_s = 0;
    double apply_s = 0;
    double data_wait_s = 0;
  };

  progress_update snapshot() const;
  /// The workers' figures without the steps ahead of the completed ones.
  std::vector<worker_report> completed_workers() const;
  /// Counts `rows` (negative: takes them off) towards `step`'s epoch.
  void add_rows(int64_t step, int64_t rows);
  void write(const nlohmann::json& record);
  worker_report* worker(int64_t w);

  step_rules rules_;
  jsonl_writer* metrics_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_step_end_;
  int64_t completed_steps_ = 0;
  int64_t samples_ = 0;
  std::vector<int64_t> rows_per_epoch_;
  double eval_s_ = 0;  ///< wall time the run spent evaluating (slowest shard per round)
  double last_loss_ = 0;
  double last_samples_per_s_ = 0;
  double last_step_s_ = 0;  ///< the last completed step's duration
  std::deque<double> recent_losses_;
  tracker_options options_;
  std::optional<double> test_loss_;
  std::optional<double> test_accuracy_;
  std::optional<double> validation_loss_;
  std::optional<double> validation_accuracy_;
  std::optional<int64_t> last_evaluated_;
  std::optional<records::confusion> last_confusion_;
  std::map<int64_t, eval_round> evals_;
  std::vector<worker_report> workers_;
  std::multimap<int64_t, step_ahead> ahead_;  ///< by step, each at or after completed_steps_
  std::map<int64_t, int64_t> staleness_histogram_;
  std::optional<stage_windows> stage_windows_;
  std::optional<double> predicted_bubble_;
  record_windows windows_;
  failure_log failures_;
};

}  // namespace troupe
