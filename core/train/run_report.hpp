// What a finished (or failed) run reports: the figures summary.json holds, plus the collected
// final weights. Built by the run driver, written by the caller.
#pragma once

#include "core/metrics/records.hpp"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

/// Figures one worker accumulated over the run (seconds are wall time on its own thread).
struct worker_report {
  int64_t rank = 0;
  int64_t steps = 0;
  int64_t samples = 0;
  double compute_s = 0;    ///< forward + backward
  double comm_s = 0;       ///< from sending its gradient to receiving the combined one
  double apply_s = 0;      ///< copying the combined gradient in and the optimizer step
  double eval_s = 0;       ///< evaluating its share of the test set
  double wait_s = 0;       ///< async: held back by the staleness bound
  double data_wait_s = 0;  ///< waiting for batches' rows (the loader behind, or no loader)
  /// Pipelines only (stage >= 0): compute_s is the time in forward/backward operations, and
  /// idle_s the rest of each step's flush window (the bubble plus message latency).
  int64_t pipeline = -1;
  int64_t stage = -1;
  double idle_s = 0;
  int64_t peak_live_activations = 0;
  /// fp16 only (loss_scale > 0): the loss scale at the end, and the steps skipped for an
  /// overflowed gradient (core/train/loss_scaler).
  double loss_scale = 0;
  int64_t skipped_steps = 0;
};

/// A stacked ensemble's member: how it was set up and how it scored at the last evaluation.
struct member_report {
  int64_t member = 0;
  uint64_t seed = 0;  ///< of its initial weights (job seed + member)
  double lr = 0;
  std::optional<double> test_loss;
  std::optional<double> test_accuracy;
  std::optional<double> validation_loss;  ///< with a validation set: its last evaluation
  std::optional<double> validation_accuracy;
};

struct run_report {
  run_status status = run_status::failed;
  std::string error;    ///< why it failed, naming the worker where one failed
  double wall_s = 0;    ///< from the first step to the end, evaluations included
  double train_s = 0;   ///< wall_s less the time spent evaluating
  int64_t steps = 0;    ///< completed optimizer steps
  int64_t samples = 0;  ///< training samples in the completed steps
  /// The rows each epoch's completed steps trained into the weights (index: epoch; the last may
  /// be partial): every row of an epoch once, however many nodes were lost (sync); not a lost
  /// local SGD replica's since its last average, which no average holds.
  std::vector<int64_t> rows_per_epoch;
  int64_t replicas = 0;
  /// Inputs left out of the data because they could not be read (data.bad_images "skip").
  int64_t skipped_inputs = 0;
  std::optional<double> final_train_loss;  ///< mean of the last (up to) 50 steps' losses
  std::optional<double> test_loss;         ///< of the last evaluation
  std::optional<double> test_accuracy;     ///< of the last evaluation: its metric's value
  /// The evaluations' metric (core/train/loss.hpp): summary.json names the *_accuracy figures
  /// "test_mse" / "test_mae" (and so on) for a regression loss.
  std::string metric = "accuracy";
  /// With a validation set: its last evaluation (the test figures are then those of the one
  /// evaluation of the test set, at the end, on the weights the run kept).
  std::optional<double> validation_loss;
  std::optional<double> validation_accuracy;
  /// keep_best: the evaluation whose weights were kept (best_weights), by which metric and
  /// figure; early stopping: the evaluation after which training stopped.
  std::optional<int64_t> best_step;
  std::string best_metric;
  std::optional<double> best_value;
  at::Tensor best_weights;  ///< flat, like final_weights
  std::optional<int64_t> stopped_early_at;
  std::vector<worker_report> workers;
  /// async: how many applied gradients had each staleness (versions between pull and push).
  std::map<int64_t, int64_t> staleness_histogram;

  /// Pipelines: idle time over flush windows, summed over all stages, and the ideal figure.
  std::optional<double> bubble_fraction;
  std::optional<double> predicted_bubble_fraction;
  at::Tensor final_weights;  ///< flat; undefined if the run failed before collecting them
  /// Lost nodes and replacements (core/train/failure_log.hpp summary): merged into
  /// summary.json; an empty object when there were none.
  nlohmann::json failures = nlohmann::json::object();
  /// Stacked ensembles: each member's figures and its weights as a standard state dict (the
  /// run's test_* figures are then the ensemble's averaged prediction).
  std::vector<member_report> members;
  std::vector<std::vector<std::pair<std::string, at::Tensor>>> member_weights;

  bool succeeded() const { return status == run_status::succeeded; }
  double samples_per_s() const { return train_s > 0 ? static_cast<double>(samples) / train_s : 0; }
};

/// `wall_s` turns the worker's wait into the fraction of the run it spent waiting.
nlohmann::json to_json(const worker_report& w, double wall_s);
nlohmann::json to_json(const run_report& r);

}  // namespace troupe
