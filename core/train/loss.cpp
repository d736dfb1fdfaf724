#include "core/train/loss.hpp"

#include <ATen/ATen.h>
#include <torch/nn/functional/loss.h>

#include <stdexcept>

namespace troupe {
namespace {

namespace F = torch::nn::functional;

// Target values per row: a mean over them turns a whole-batch sum into the sum of row means.
double values_per_row(const at::Tensor& target) {
  return target.dim() <= 1 ? 1.0 : static_cast<double>(target[0].numel());
}

at::Tensor elementwise(loss_kind kind, const at::Tensor& output, const at::Tensor& target,
                       at::Reduction::Reduction reduction) {
  switch (kind) {
    case loss_kind::mse:
      return at::mse_loss(output, target, reduction);
    case loss_kind::l1:
      return at::l1_loss(output, target, reduction);
    case loss_kind::bce_with_logits:
      return at::binary_cross_entropy_with_logits(output, target, {}, {}, reduction);
    case loss_kind::cross_entropy:
      break;
  }
  throw std::logic_error("elementwise: cross_entropy has no elementwise form");
}

}  // namespace

at::Tensor mean_loss(loss_kind kind, const at::Tensor& output, const at::Tensor& target) {
  if (kind == loss_kind::cross_entropy)
    return F::cross_entropy(output, target);
  return elementwise(kind, output.reshape(target.sizes()), target, at::Reduction::Mean);
}

loss_sums summed_loss(loss_kind kind, const at::Tensor& output, const at::Tensor& target) {
  if (kind == loss_kind::cross_entropy)
    return {F::cross_entropy(output, target, F::CrossEntropyFuncOptions().reduction(torch::kSum))
                .item<double>(),
            output.argmax(1).eq(target).sum().item<double>()};
  const auto out = output.reshape(target.sizes());
  const double per_row = values_per_row(target);
  const double loss = elementwise(kind, out, target, at::Reduction::Sum).item<double>() / per_row;
  if (kind != loss_kind::bce_with_logits)
    return {loss, loss};  // mse's metric is its loss, and so is l1's mae
  const auto right = out.gt(0).eq(target.gt(0.5)).sum().item<double>();
  return {loss, right / per_row};
}

const char* metric_name(loss_kind kind) {
  switch (kind) {
    case loss_kind::mse:
      return "mse";
    case loss_kind::l1:
      return "mae";
    case loss_kind::cross_entropy:
    case loss_kind::bce_with_logits:
      break;
  }
  return "accuracy";
}

}  // namespace troupe
