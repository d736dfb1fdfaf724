#include "core/data/targets.hpp"

#include "core/errors.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>

#include <vector>

namespace troupe {
namespace {

std::vector<int64_t> row_shape(const at::Tensor& t) {
  return std::vector<int64_t>(t.sizes().begin() + 1, t.sizes().end());
}

at::Tensor checked_labels(const std::string& where, const at::Tensor& y, const at::Tensor& train) {
  const auto lowest = y.min().item<int64_t>();
  const auto highest = y.max().item<int64_t>();
  if (lowest < 0)
    throw data_error(fmt::format("{} holds the label {}; labels count from 0", where, lowest));
  if (!train.defined() && highest >= max_tensor_classes)
    throw data_error(fmt::format("{} holds the label {}; at most {} classes", where, highest,
                                 max_tensor_classes));
  if (train.defined() && highest >= outputs_for(train))
    throw data_error(
        fmt::format("{} holds the label {}, but the training data has {} classes (0..{})", where,
                    highest, outputs_for(train), outputs_for(train) - 1));
  return y.contiguous().clone();
}

at::Tensor checked_floats(const std::string& where, const at::Tensor& y) {
  auto targets = y.to(at::kFloat).contiguous();
  if (targets.data_ptr() == y.data_ptr())
    targets = targets.clone();
  if (const auto row = first_non_finite_row(targets))
    throw data_error(fmt::format("{} holds non-finite values (first in row {})", where, *row));
  return targets;
}

}  // namespace

std::optional<int64_t> first_non_finite_row(const at::Tensor& rows) {
  const auto n = rows.size(0);
  if (n == 0)
    return std::nullopt;
  const auto flat = rows.reshape({n, -1});
  const int64_t chunk =
      std::max<int64_t>(1, (int64_t{1} << 20) / std::max<int64_t>(1, flat.size(1)));
  for (int64_t begin = 0; begin < n; begin += chunk) {
    const auto part = flat.narrow(0, begin, std::min(chunk, n - begin));
    const auto finite = at::isfinite(part).all(1);
    if (!finite.all().item<bool>())
      return begin + at::logical_not(finite).nonzero()[0][0].item<int64_t>();
  }
  return std::nullopt;
}

bool class_labels(const at::Tensor& targets) {
  return targets.scalar_type() == at::kLong;
}

std::string describe_targets(bool labels, const std::vector<int64_t>& target_shape) {
  if (labels)
    return "int64 class labels";
  if (target_shape.empty())
    return "float32 targets (one per row)";
  return fmt::format("float32 targets [{}] per row", fmt::join(target_shape, ", "));
}

at::Tensor checked_targets(const std::string& where, const at::Tensor& y, const at::Tensor& train) {
  const bool labels = y.scalar_type() == at::kLong && y.dim() == 1;
  const bool floats =
      (y.scalar_type() == at::kFloat || y.scalar_type() == at::kDouble) && y.dim() >= 1;
  if (!labels && !floats)
    throw data_error(fmt::format(
        "{} is {} [{}]; it must be int64 [N] class labels (cross_entropy) or float32 [N, ...] "
        "targets (mse, l1, bce_with_logits)",
        where, c10::toString(y.scalar_type()), fmt::join(y.sizes(), ", ")));
  if (y.size(0) == 0)
    return y;  // the caller names the empty file
  if (train.defined() &&
      (labels != class_labels(train) || (!labels && row_shape(y) != row_shape(train))))
    throw data_error(fmt::format("{} holds {}, the training data {}: they must match", where,
                                 describe_targets(labels, row_shape(y)),
                                 describe_targets(class_labels(train), row_shape(train))));
  return labels ? checked_labels(where, y, train) : checked_floats(where, y);
}

int64_t outputs_for(const at::Tensor& train_targets) {
  if (class_labels(train_targets))
    return train_targets.max().item<int64_t>() + 1;
  return train_targets.dim() == 1 ? 1 : train_targets[0].numel();
}

}  // namespace troupe
