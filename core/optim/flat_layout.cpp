#include "core/optim/flat_layout.hpp"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

namespace troupe {

flat_layout::flat_layout(const std::vector<at::Tensor>& parameters) {
  int64_t offset = 0;
  for (const auto& p : parameters) {
    TORCH_CHECK(p.scalar_type() == at::kFloat, "flat_layout: parameters must be float32");
    shapes_.push_back(p.sizes().vec());
    offsets_.push_back(offset);
    offset += p.numel();
  }
  offsets_.push_back(offset);
}

at::Tensor flat_layout::view(const at::Tensor& flat, std::size_t i) const {
  return flat.narrow(0, begin(i), end(i) - begin(i)).view(shapes_[i]);
}

void flat_layout::check_step_buffers(const at::Tensor& weights, const at::Tensor& grads) const {
  TORCH_CHECK(weights.is_contiguous() && grads.is_contiguous() &&
                  weights.scalar_type() == at::kFloat && grads.scalar_type() == at::kFloat &&
                  weights.numel() == total() && grads.numel() == total(),
              "fused optimizer step: weights and gradient must be contiguous float32 [", total(),
              "]");
}

void flat_layout::check_state_size(const at::Tensor& state, std::size_t i, const char* what) const {
  if (state.scalar_type() == at::kFloat && state.numel() == end(i) - begin(i))
    return;
  throw std::runtime_error("optimizer state does not load: parameter " + std::to_string(i) + "'s " +
                           what + " has " + std::to_string(state.numel()) + " values of type " +
                           c10::toString(state.scalar_type()) + "; the parameter has " +
                           std::to_string(end(i) - begin(i)) + " of type Float");
}

}  // namespace troupe
