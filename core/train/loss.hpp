// The loss a job trains with (training.loss) and the metric its evaluations report: one place
// that every engine (replicas, pipeline stages) computes them from, so that they cannot differ.
#pragma once

#include "core/job/job_config.hpp"

#include <ATen/core/Tensor.h>

namespace troupe {

/// The mean loss of a batch: `output` is the model's [B, ...], `target` the data's labels
/// (int64 [B] for cross_entropy) or float targets [B, ...] (the others), which `output` is
/// reshaped to. For mse, l1 and bce_with_logits the mean is over every target value, as PyTorch's
/// default reduction takes it.
at::Tensor mean_loss(loss_kind kind, const at::Tensor& output, const at::Tensor& target);

/// A batch's figures summed over its rows, so that shards and chunks add up: each row counts its
/// own mean loss and its metric (1 or 0 for a correct class; the share of labels right at 0.5;
/// its mean squared or absolute error).
struct loss_sums {
  double loss = 0;
  double metric = 0;
};
loss_sums summed_loss(loss_kind kind, const at::Tensor& output, const at::Tensor& target);

/// What the metric is called where it is reported: "accuracy", "mse" or "mae".
const char* metric_name(loss_kind kind);

}  // namespace troupe
