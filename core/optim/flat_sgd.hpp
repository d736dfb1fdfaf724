// LibTorch's SGD step, fused into one pass over parameters that live in one flat buffer
// (core/model/flat_parameters). torch::optim::SGD walks the parameters one by one and makes two
// to five ATen calls on each (decay, momentum, the update), every call one more pass over the
// values: on the MLP's 235,146 weights with momentum that is 81 µs a step on one thread, about
// 7% of a step of two replicas on two cores. One pass over the flat buffer, reading each weight,
// gradient and momentum once, takes 43 µs (bench/optimizer_step.cpp).
//
// The optimizer still owns its state: the momentum buffers it holds are views of one flat buffer
// of this object's, so checkpoints (core/optim/optimizer_bytes), momentum averaging and a
// restored state read and write the same values as before, in the same layout.
//
// The arithmetic is LibTorch's, element for element and in float32 (its scalars rounded to
// float32 as ATen rounds them): decay, then the momentum buffer (a fresh one is the first step's
// gradient), then Nesterov's look-ahead, then the update. It may differ from LibTorch's in the
// last bit where one of the two contracts a multiply and an add into one rounding and the other
// does not (ATen's vectorized loops do). Every replica takes this path, so replicas stay
// identical, and a resumed run continues bit for bit.
//
// Thread safety: none, as the optimizer's.
#pragma once

#include "core/optim/flat_layout.hpp"

#include <ATen/core/Tensor.h>
#include <torch/optim/sgd.h>

#include <cstdint>
#include <vector>

namespace troupe {

class flat_sgd {
 public:
  /// `optimizer` steps `parameters`, in this order, and only them; their values are consecutive
  /// slices of one float32 buffer from its first element on, and so are their gradients'.
  flat_sgd(torch::optim::SGD& optimizer, std::vector<at::Tensor> parameters);

  /// One step of the optimizer with learning rate `lr` (the plan's rate for the step: a value
  /// handed in, not read back from LibTorch's options) and its other options as they are, over
  /// the parameters' flat `weights` and `grads` (contiguous float32, one element per parameter
  /// element, on the parameters' device). Creates the momentum buffers at the first step, as
  /// LibTorch does.
  void step(const at::Tensor& weights, const at::Tensor& grads, double lr);
  /// The same with the rate the options hold (tests that step LibTorch's optimizer beside it).
  void step(const at::Tensor& weights, const at::Tensor& grads);

  /// Whether a pass splits over the intra-op threads (at::parallel_for's parallel half is
  /// compiled in only with OpenMP; without it every pass runs on the calling thread).
  static bool splits_over_threads();

  /// Call after the optimizer's state was replaced (a checkpoint loaded into it): the momentum
  /// buffers it now holds become views of the flat one, with their values.
  void adopt_state();

 private:
  /// `parameters_[i]`'s momentum buffer: a view of momenta_, filed in the optimizer's state.
  torch::optim::SGDParamState& create_state(std::size_t i);

  torch::optim::SGD& optimizer_;
  std::vector<at::Tensor> parameters_;
  flat_layout layout_;
  at::Tensor momenta_;  ///< every parameter's momentum buffer, once the first exists
  std::vector<torch::optim::SGDParamState*> states_;  ///< null: no buffer yet
};

}  // namespace troupe
