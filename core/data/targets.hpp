// What a data file may hold as its targets, checked the same way for every file format
// (tensor files, CSV tables): int64 class labels [N] for cross_entropy, or float targets
// [N, ...] for the regression and multi-label losses (core/train/loss).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

/// The largest class count accepted: a label of 10^9 would otherwise size the model's output.
inline constexpr int64_t max_tensor_classes = 100000;

/// Checks one split's targets `y` and returns them ready to train on: int64 labels [N] counting
/// from 0, or float32 targets [N, ...] (float64 is narrowed) with every value finite. `train` is
/// undefined for the training split; for the test split it is the training split's targets,
/// which these must match in kind and row shape, labels staying below its class count.
/// Throws data_error starting with `where` (the file and key, e.g. `test.pt: "y"`).
at::Tensor checked_targets(const std::string& where, const at::Tensor& y, const at::Tensor& train);

/// The model's outputs for these training targets: 1 + the largest label, or the values in one
/// target row.
int64_t outputs_for(const at::Tensor& train_targets);

/// The first row of `rows` ([N, ...], floating point) holding a NaN or an infinity, if any.
/// Checked a few thousand rows at a time: at::isfinite of the whole tensor would allocate more
/// than the tensor itself (a float temporary and a bool mask).
std::optional<int64_t> first_non_finite_row(const at::Tensor& rows);

/// Whether `targets` are class labels (else float targets).
bool class_labels(const at::Tensor& targets);

/// "int64 class labels" or "float32 targets [3]": for messages and the plan.
std::string describe_targets(bool class_labels, const std::vector<int64_t>& target_shape);

}  // namespace troupe
