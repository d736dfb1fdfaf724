// LibTorch's Adam step, fused into one pass over parameters that live in one flat buffer, as
// flat_sgd is SGD's: torch::optim::Adam makes about eight ATen calls on each parameter, each a
// pass over its values and some with a temporary. On one thread that took 253 µs a step on the
// MLP's 235,146 weights and 874 µs on the CNN's 215,370 (many small tensors), the fused pass 192
// and 175 µs (bench/optimizer_step.cpp); a step's forward and backward on the MLP take about 1 ms.
//
// The optimizer still owns its state: each parameter's averages (exp_avg, exp_avg_sq) are views
// of two flat buffers of this object's, and its step count stays in its state, so checkpoints
// see the state as before. Parameters whose step counts differ (a state restored in part) are
// stepped in runs of equal counts, each with its own bias corrections.
//
// AdamW (flat_adamw) is the same pass over torch::optim::AdamW's state with the weight decay
// decoupled, as LibTorch's and PyTorch's AdamW do it: the weights first shrink by
// 1 - lr x weight_decay, and the decay never enters the moments.
//
// The arithmetic is LibTorch's, element for element and in float32, with its scalars rounded as
// ATen rounds them; it may differ in the last bit where ATen's vectorized loops contract a
// multiply and an add and this pass does not. AMSGrad, which troupe does not configure, is left
// to LibTorch's own step.
//
// Thread safety: none, as the optimizer's.
#pragma once

#include "core/optim/flat_layout.hpp"

#include <ATen/core/Tensor.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>

#include <type_traits>
#include <vector>

namespace troupe {

/// `Optimizer`: torch::optim::Adam or torch::optim::AdamW (flat_adam, flat_adamw below).
template <class Optimizer>
class basic_flat_adam {
 public:
  using options_type = std::conditional_t<std::is_same_v<Optimizer, torch::optim::AdamW>,
                                          torch::optim::AdamWOptions, torch::optim::AdamOptions>;
  using state_type =
      std::conditional_t<std::is_same_v<Optimizer, torch::optim::AdamW>,
                         torch::optim::AdamWParamState, torch::optim::AdamParamState>;
  /// The weight decay is decoupled from the gradient (AdamW).
  static constexpr bool decoupled = std::is_same_v<Optimizer, torch::optim::AdamW>;

  /// As flat_sgd's.
  basic_flat_adam(Optimizer& optimizer, std::vector<at::Tensor> parameters);

  /// One step of the optimizer with learning rate `lr` and its other options as they are, over
  /// the parameters' flat `weights` and `grads` (as flat_sgd::step). Creates a parameter's state
  /// at its first step.
  void step(const at::Tensor& weights, const at::Tensor& grads, double lr);
  /// The same with the rate the options hold.
  void step(const at::Tensor& weights, const at::Tensor& grads);

  /// Whether a pass splits over the intra-op threads (at::parallel_for's parallel half is
  /// compiled in only with OpenMP; without it every pass runs on the calling thread).
  static bool splits_over_threads();

  /// Call after the optimizer's state was replaced: its averages become views of the flat ones.
  void adopt_state();

 private:
  /// A fresh state for parameters_[i]: step 0, zero averages (views of the flat ones).
  state_type& create_state(std::size_t i);

  Optimizer& optimizer_;
  std::vector<at::Tensor> parameters_;
  flat_layout layout_;
  at::Tensor averages_;              ///< every parameter's exp_avg
  at::Tensor squares_;               ///< every parameter's exp_avg_sq
  std::vector<state_type*> states_;  ///< null: no state yet
};

using flat_adam = basic_flat_adam<torch::optim::Adam>;
using flat_adamw = basic_flat_adam<torch::optim::AdamW>;

}  // namespace troupe
