// LibTorch's RMSprop step fused into one pass over parameters that live in one flat buffer, as
// flat_sgd and flat_adam are for theirs: torch::optim::RMSprop makes five to nine ATen calls on
// each parameter (the weight decay, the squares' average, with `centered` the gradients'
// average, the root, with momentum its buffer), each a pass over its values.
//
// The weight decay goes through ATen's own add first (one more pass when it is set): its vector
// kernel is one fused multiply-add, and where the decay nearly cancels the gradient RMSprop
// divides that difference by its own root, so a second rounding moved weights by 1e-4 a step.
//
// The optimizer still owns its state: each parameter's square_avg, momentum_buffer (momentum >
// 0) and grad_avg (centered) are views of flat buffers of this object's, and its step count
// stays in its state, so checkpoints see the state as before. RMSprop has no bias correction:
// the step count is kept for the state's sake only.
//
// The arithmetic is LibTorch's (torch.optim.RMSprop's), element for element and in float32, each
// operation in ATen's order; it may differ in the last bit where ATen's vectorized loops contract
// a multiply and an add and this pass does not (with momentum that drift reached 1.7e-6 in 100
// steps on weights of about 1; without, under 1e-6).
//
// Thread safety: none, as the optimizer's.
#pragma once

#include "core/optim/flat_layout.hpp"

#include <ATen/core/Tensor.h>
#include <torch/optim/rmsprop.h>

#include <vector>

namespace troupe {

class flat_rmsprop {
 public:
  /// As flat_sgd's.
  flat_rmsprop(torch::optim::RMSprop& optimizer, std::vector<at::Tensor> parameters);

  /// One step with learning rate `lr` and the other options as they are, over the parameters'
  /// flat `weights` and `grads` (as flat_sgd::step). Creates a parameter's state at its first
  /// step.
  void step(const at::Tensor& weights, const at::Tensor& grads, double lr);

  /// Call after the optimizer's state was replaced: its buffers become views of the flat ones.
  void adopt_state();

 private:
  torch::optim::RMSpropParamState& create_state(std::size_t i);
  /// The flat buffers the options need, zeroed, when they do not exist yet.
  void allocate(const at::TensorOptions& options);

  torch::optim::RMSprop& optimizer_;
  std::vector<at::Tensor> parameters_;
  flat_layout layout_;
  at::Tensor squares_;    ///< every parameter's square_avg
  at::Tensor momenta_;    ///< every parameter's momentum_buffer (momentum > 0)
  at::Tensor gradients_;  ///< every parameter's grad_avg (centered)
  std::vector<torch::optim::RMSpropParamState*> states_;  ///< null: no state yet
};

}  // namespace troupe
