// Every record a run writes to metrics.jsonl, and every status a run or a suite job ends with,
// defined once: the tracker and the ensemble loop write these, the summary writer and the
// suite runner read the status values, and a later reader of metrics.jsonl finds each record's
// fields here. Each record knows its "event" name; to_json adds it.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

/// How a run (or a job of a suite) ended; a suite's job that never ran is not_started, and one
/// its suite ended early because it could not catch the others (stop_losers) is stopped: not a
/// failure, but not a completed run either.
/// diverged: the loss stopped being a number, or stayed far above where it began
/// (core/train/divergence_watch): an outcome of the job's settings, not a failure of the run.
enum class run_status { succeeded, failed, not_started, stopped, diverged };

/// "succeeded", "failed", "not started", "stopped", "diverged".
const char* to_string(run_status x);
/// The inverse of to_string; anything else (a summary written by someone else) is nullopt.
std::optional<run_status> parse_run_status(const std::string& text);

namespace records {

/// A completed step of the whole run (all replicas).
struct step {
  static constexpr const char* event = "step";
  int64_t step = 0;
  int64_t epoch = 0;
  double loss = 0;  ///< the global batch's mean loss
  int64_t samples = 0;
  double samples_per_s = 0;
  double step_s = 0;    ///< since the previous step completed
  double reduce_s = 0;  ///< combining gradients at the driver
  double t = 0;         ///< seconds since the run started
  double lr = 0;        ///< the learning rate of this step's update
};

/// One worker's timings of one step (under async, comm_s is the wait for its weights).
struct worker_step {
  static constexpr const char* event = "worker_step";
  int64_t step = 0;
  int64_t worker = 0;
  double compute_s = 0;
  double comm_s = 0;
  double apply_s = 0;
  double data_wait_s = 0;  ///< waiting for the batch's rows (not in compute_s)
};

/// One pipeline stage in one step: busy in forward/backward, idle the rest of its flush window.
struct stage_step {
  static constexpr const char* event = "stage_step";
  int64_t step = 0;
  int64_t worker = 0;
  int64_t pipeline = 0;
  int64_t stage = 0;
  double busy_s = 0;
  double idle_s = 0;
  int64_t peak_live_activations = 0;
};

/// An evaluation after `step` on the whole validation set ("validation_loss",
/// "validation_accuracy") or test set ("test_loss", "test_accuracy"); "_mse" or "_mae" instead
/// of "_accuracy" for a regression loss (`metric`). A run with a validation
/// set evaluates the test set once, at the end, on the weights it keeps (`weights`: "final" or
/// "best"); other runs evaluate the test set as they go (`weights` left out).
struct eval {
  static constexpr const char* event = "eval";
  int64_t step = 0;
  int64_t epoch = 0;
  std::string split = "test";  ///< "validation" or "test": the keys' prefix
  double loss = 0;
  double accuracy = 0;  ///< the metric's value: accuracy, or mse or mae (`metric`)
  int64_t samples = 0;
  double eval_s = 0;
  double t = 0;
  std::string weights;
  std::string metric = "accuracy";  ///< core/train/loss.hpp metric_name: the key's suffix
};

/// A stacked ensemble member's evaluation.
struct member_eval {
  static constexpr const char* event = "member_eval";
  int64_t step = 0;
  int64_t member = 0;
  std::string split = "test";  ///< as in eval: the keys' prefix
  double loss = 0;
  double accuracy = 0;
  double t = 0;
};

/// async: a pushed gradient applied at the parameter server.
struct applied {
  static constexpr const char* event = "applied";
  int64_t worker = 0;
  int64_t clock = 0;    ///< the worker's clock after this push
  int64_t version = 0;  ///< the server's version after applying it
  int64_t staleness = 0;
};

/// async: a worker held back by the staleness bound.
struct waited {
  static constexpr const char* event = "waited";
  int64_t worker = 0;
  int64_t clock = 0;
  double wait_s = 0;
};

/// schedule: the policy that takes over at `step`.
struct phase {
  static constexpr const char* event = "phase";
  int64_t step = 0;
  std::string policy;
  double t = 0;
};

/// Why the run failed.
struct failure {
  static constexpr const char* event = "failure";
  std::string error;
  double t = 0;
};

/// A checkpoint of the state after `step` was written (or, with `error`, could not be).
struct checkpoint {
  static constexpr const char* event = "checkpoint";
  int64_t step = 0;
  int64_t bytes = 0;
  double seconds = 0;  ///< encoding and writing, beside the training
  std::string error;   ///< empty when it was written
  double t = 0;
};

/// The run resumed from the checkpoint of `step` in `path`; `skipped` newer ones did not verify.
struct resumed {
  static constexpr const char* event = "resumed";
  int64_t step = 0;
  std::string path;
  int64_t skipped = 0;
  double t = 0;
};

/// A node was lost and the run carries on without it (cluster.on_node_loss "continue"):
/// `workers` were its ranks, `step` the first step not complete then (in flight), `detection_s`
/// the time from the last message the driver had from it to the loss being noticed (an upper
/// bound on failure-to-notice), `unix_s` the wall-clock time it was noticed (seconds since
/// 1970, to compare with a clock outside the run).
struct node_lost {
  static constexpr const char* event = "node_lost";
  std::string node;
  std::vector<int64_t> workers;
  std::string reason;
  int64_t step = 0;
  double detection_s = 0;
  int64_t live_nodes = 0;  ///< after the loss
  double unix_s = 0;
  double t = 0;
};

/// Step `step` was in flight when the membership changed and is computed again by the live
/// workers of epoch `epoch`.
struct step_redone {
  static constexpr const char* event = "step_redone";
  int64_t step = 0;
  int64_t epoch = 0;
  double t = 0;
};

/// A replacement node joined the running job: its workers hold the state after `step` - 1 and
/// compute from `step` on; `state_bytes` is what they received (weights and optimizer state).
struct node_joined {
  static constexpr const char* event = "node_joined";
  std::string node;
  std::vector<int64_t> workers;
  int64_t step = 0;
  int64_t state_bytes = 0;
  int64_t epoch = 0;
  double t = 0;
};

/// After a replacement joined: the replicas `workers` that must hold the same weights after
/// `step` reported the same SHA-256 of them (`sha256`) before computing on (a difference ends
/// the run instead).
struct replicas_checked {
  static constexpr const char* event = "replicas_checked";
  std::vector<int64_t> workers;
  int64_t step = 0;
  int64_t epoch = 0;
  std::string sha256;
  double t = 0;
};

/// A classification's final evaluation, class by class: `counts` is the confusion matrix
/// (core/train/confusion), `classes` x `classes` row-major, row the true class and column the
/// predicted one; `accuracy` each true class's share predicted right (null for a class with no
/// rows). Written once, at the end of a run: of the test set, or of the validation set where the
/// test set is evaluated only in the report's summary.
struct confusion {
  static constexpr const char* event = "confusion";
  int64_t step = 0;
  std::string split = "test";
  int64_t classes = 0;
  std::vector<int64_t> counts;
  std::string weights;  ///< "final" or "best", as in eval; empty: the run's last evaluation
  double t = 0;
};

/// fp16 (core/train/loss_scaler): a worker's loss scale from this step on, written at its first
/// step and whenever it changes (halved for an overflowed gradient, whose step was skipped, or
/// doubled after a run of finite ones).
struct loss_scale {
  static constexpr const char* event = "loss_scale";
  int64_t step = 0;
  int64_t worker = 0;
  double scale = 0;
  int64_t skipped_steps = 0;  ///< so far, on this worker
  double t = 0;
};

nlohmann::json to_json(const step& r);
nlohmann::json to_json(const worker_step& r);
nlohmann::json to_json(const loss_scale& r);
nlohmann::json to_json(const stage_step& r);
nlohmann::json to_json(const eval& r);
nlohmann::json to_json(const member_eval& r);
nlohmann::json to_json(const applied& r);
nlohmann::json to_json(const waited& r);
nlohmann::json to_json(const phase& r);
nlohmann::json to_json(const failure& r);
nlohmann::json to_json(const checkpoint& r);
nlohmann::json to_json(const resumed& r);
nlohmann::json to_json(const node_lost& r);
nlohmann::json to_json(const step_redone& r);
nlohmann::json to_json(const node_joined& r);
nlohmann::json to_json(const replicas_checked& r);
nlohmann::json to_json(const confusion& r);
/// How many rows of each true class the matrix counts (its rows' sums).
std::vector<int64_t> class_rows(const confusion& r);
/// Each true class's share of its rows predicted right (the diagonal over the row's sum);
/// nothing for a class with no rows.
std::vector<std::optional<double>> per_class_accuracy(const confusion& r);

}  // namespace records
}  // namespace troupe
