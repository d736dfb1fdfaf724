// What a run does with its validation figures: keep the weights of the best evaluation
// (training.keep_best) and stop when the figure has not improved for `patience` evaluations
// (training.early_stopping). It is fed each completed evaluation and the weights that were
// evaluated (a snapshot, in parts when a pipeline's stages each hold a slice), in either order,
// and keeps a snapshot only as long as a verdict may still need it.
//
// Thread safety: none; owned by the run driver (or the ensemble loop).
#pragma once

#include "core/job/job_config.hpp"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <vector>

namespace troupe {

/// Judges one metric: the best value so far, and evaluations since it improved.
class metric_watch {
 public:
  metric_watch(monitor_metric metric, double min_delta);
  /// Returns whether (loss, accuracy) improves on the best by more than min_delta.
  bool improves(double loss, double accuracy);
  int64_t since_best() const { return since_best_; }
  std::optional<double> best() const { return best_; }
  /// Its state, for a checkpoint; restore() puts it back in a resumed run.
  nlohmann::json save() const;
  void restore(const nlohmann::json& saved);

 private:
  monitor_metric metric_;
  double min_delta_;
  std::optional<double> best_;
  int64_t since_best_ = 0;
};

class validation_keeper {
 public:
  /// `stage_parameters`: a pipeline's, to put its stages' weights in the model's order
  /// (core/pipeline/stage_weights); empty otherwise.
  validation_keeper(std::optional<monitor_metric> keep_best,
                    std::optional<early_stopping_config> early_stopping,
                    std::vector<int64_t> stage_parameters = {});

  /// Whether evaluated weights must be handed in (either option is on).
  bool wants_snapshots() const { return keep_ || stop_; }

  /// The evaluation after `step` is complete with these validation figures.
  void on_evaluation(int64_t step, double loss, double accuracy);
  /// Part `part` of `parts` of the weights evaluated after `step` (one part: the whole model;
  /// a pipeline's stages in order otherwise).
  void on_snapshot(int64_t step, int64_t part, int64_t parts, at::Tensor weights);

  /// Set once early stopping decided and the weights of that evaluation are in.
  std::optional<int64_t> stopped_at() const { return stopped_at_; }
  const at::Tensor& stop_weights() const { return stop_weights_; }
  /// The best evaluation so far (keep_best), its figure and its weights, once the weights are
  /// in: a better evaluation whose weights are still awaited is not the best yet.
  std::optional<int64_t> best_step() const { return best_step_; }
  std::optional<double> best_value() const { return best_value_; }
  const at::Tensor& best_weights() const { return best_weights_; }

  /// Whether nothing about the evaluation after `step` is still awaited (its verdict and its
  /// weights are in, or it was never seen).
  bool settled(int64_t step) const { return pending_.count(step) == 0; }

  /// The verdicts so far, for a checkpoint (the best weights go beside it, as a tensor). Call
  /// only when no evaluation is pending, as at a checkpoint's step.
  nlohmann::json save() const;
  /// A resumed run: the state save() returned, and the best weights.
  void restore(const nlohmann::json& saved, at::Tensor best_weights);

 private:
  std::vector<int64_t> stage_parameters_;
  struct pending {
    std::vector<at::Tensor> parts;
    int64_t received = 0;
    std::optional<bool> best;  ///< the verdict, once the evaluation is in
    double value = 0;          ///< its figure, where it is the best
    bool stop = false;
  };
  void settle(int64_t step);

  std::optional<metric_watch> keep_;
  std::optional<metric_watch> stop_;
  int64_t patience_ = 0;
  std::map<int64_t, pending> pending_;  ///< by step
  std::optional<int64_t> best_step_;
  std::optional<double> best_value_;
  at::Tensor best_weights_;
  std::optional<int64_t> stopped_at_;
  at::Tensor stop_weights_;
  bool stop_decided_ = false;
};

}  // namespace troupe
