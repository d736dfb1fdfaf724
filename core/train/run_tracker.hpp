// Book-keeping of a run, free of actor code: folds step completions, per-worker timings and
// evaluation shards into metrics.jsonl records, progress snapshots and the final run_report.
// The coordinator feeds it; tests can feed it directly.
//
// Thread safety: none; owned by the coordinator.
#pragma once

#include "core/metrics/jsonl_writer.hpp"
#include "core/train/progress.hpp"
#include "core/train/run_report.hpp"

#include <chrono>
#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <vector>

namespace troupe {

/// When to evaluate: every `eval_interval` steps (0: at the end of every epoch) and always
/// after the last step. `step` is 0-based; the evaluation follows that step's update.
bool should_evaluate(int64_t step, int64_t total_steps, int64_t steps_per_epoch,
                     int64_t eval_interval);

/// One worker's share of a completed step.
struct step_part {
  int64_t worker = 0;
  double loss = 0;
  int64_t samples = 0;
};

class run_tracker {
 public:
  run_tracker(int64_t replicas, int64_t total_steps, int64_t steps_per_epoch,
              jsonl_writer* metrics);

  /// Starts the wall clock (call when the first step is handed out).
  void start();

  /// A step completed with these parts (in worker order). Returns the progress snapshot.
  progress_update on_step_complete(int64_t step, const std::vector<step_part>& parts,
                                   double reduce_s);

  /// A worker's timings for a step it applied.
  void on_worker_step(int64_t worker, int64_t step, double compute_s, double comm_s,
                      double apply_s);

  /// One worker's evaluation shard. Returns a snapshot once `expected` shards of `step` are in.
  std::optional<progress_update> on_eval_shard(int64_t worker, int64_t step, double loss_sum,
                                               int64_t correct, int64_t count, double eval_s,
                                               int64_t expected);

  /// async: a gradient of `worker`'s step `step` was applied, making `version`.
  void on_applied(int64_t worker, int64_t step, int64_t version, int64_t staleness);
  /// async: `worker` was held back `wait_s` by the staleness bound.
  void on_waited(int64_t worker, int64_t step, double wait_s);

  /// Pipelines: a stage's figures for a step it applied (after on_worker_step).
  void on_stage_step(int64_t worker, int64_t pipeline, int64_t stage, int64_t step, double busy_s,
                     double idle_s, int64_t peak_live);
  /// Pipelines: the ideal bubble fraction, reported beside the measured one.
  void set_predicted_bubble(double fraction) { predicted_bubble_ = fraction; }

  /// A notable event for metrics.jsonl (e.g. a failure), with the time since start added.
  void record_event(nlohmann::json record);

  /// The report of the run so far; `error` empty means it succeeded.
  run_report report(const std::string& error, at::Tensor final_weights) const;

 private:
  struct eval_round {
    double loss_sum = 0;
    int64_t correct = 0;
    int64_t count = 0;
    int64_t shards = 0;
    double max_eval_s = 0;
  };

  double elapsed_s() const;
  progress_update snapshot() const;

  int64_t total_steps_;
  int64_t steps_per_epoch_;
  jsonl_writer* metrics_;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_step_end_;
  int64_t completed_steps_ = 0;
  int64_t samples_ = 0;
  double eval_s_ = 0;  ///< wall time the run spent evaluating (slowest shard per round)
  double last_loss_ = 0;
  double last_samples_per_s_ = 0;
  std::deque<double> recent_losses_;
  std::optional<double> test_loss_;
  std::optional<double> test_accuracy_;
  std::map<int64_t, eval_round> evals_;
  std::vector<worker_report> workers_;
  std::map<int64_t, int64_t> staleness_histogram_;
  std::optional<double> predicted_bubble_;
};

}  // namespace troupe
