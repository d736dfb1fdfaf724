#include "core/optim/flat_rmsprop.hpp"

#include "core/optim/optimizer_state_key.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <utility>

namespace troupe {
namespace {

// RMSprop's factors, rounded to float32 where ATen rounds them.
struct rmsprop_factors {
  float alpha = 0, keep = 0;  // the averages' factor, and the new value's (1 - alpha)
  float eps = 0;
  float momentum = 0;
  float neg_lr = 0;
};

struct rmsprop_buffers {
  float* weights;
  const float* grads;
  float* squares;
  float* momenta;    // null without momentum
  float* gradients;  // null unless centered
};

// One pass over elements [begin, end): LibTorch's RMSprop element for element, each operation
// in ATen's order, on a gradient that already holds the weight decay (step() says why).
// Compiled without errno for the square root, as flat_adam.cpp.
template <bool Centered, bool Momentum>
void rmsprop_pass(const rmsprop_buffers& b, const rmsprop_factors& f, int64_t begin, int64_t end) {
  float* __restrict w = b.weights;
  const float* __restrict g = b.grads;
  float* __restrict v = b.squares;
  float* __restrict buf = b.momenta;
  float* __restrict ga = b.gradients;
  for (int64_t i = begin; i < end; ++i) {
    const float d = g[i];
    const float square = v[i] * f.alpha + f.keep * d * d;
    v[i] = square;
    float average;
    if constexpr (Centered) {
      const float mean = ga[i] * f.alpha + f.keep * d;
      ga[i] = mean;
      average = std::sqrt(square + -1.0F * mean * mean) + f.eps;
    } else {
      average = std::sqrt(square) + f.eps;
    }
    if constexpr (Momentum) {
      const float velocity = buf[i] * f.momentum + d / average;
      buf[i] = velocity;
      w[i] += f.neg_lr * velocity;
    } else {
      w[i] += f.neg_lr * d / average;
    }
  }
}

using pass_function = void (*)(const rmsprop_buffers&, const rmsprop_factors&, int64_t, int64_t);

pass_function pass_for(bool centered, bool momentum) {
  if (centered)
    return momentum ? &rmsprop_pass<true, true> : &rmsprop_pass<true, false>;
  return momentum ? &rmsprop_pass<false, true> : &rmsprop_pass<false, false>;
}

// The same step with ATen calls, for buffers off the host (`d` holds the decay, as above).
void aten_pass(at::Tensor w, const at::Tensor& d, at::Tensor v, at::Tensor buf, at::Tensor ga,
               const rmsprop_factors& f) {
  v.mul_(f.alpha).addcmul_(d, d, f.keep);
  at::Tensor average;
  if (ga.defined()) {
    ga.mul_(f.alpha).add_(d, f.keep);
    average = v.addcmul(ga, ga, -1).sqrt_().add_(f.eps);
  } else {
    average = v.sqrt().add_(f.eps);
  }
  if (buf.defined()) {
    buf.mul_(f.momentum).addcdiv_(d, average);
    w.add_(buf, f.neg_lr);
  } else {
    w.addcdiv_(d, average, f.neg_lr);
  }
}

}  // namespace

flat_rmsprop::flat_rmsprop(torch::optim::RMSprop& optimizer, std::vector<at::Tensor> parameters)
    : optimizer_(optimizer),
      parameters_(std::move(parameters)),
      layout_(parameters_),
      states_(parameters_.size()) {
  TORCH_CHECK(optimizer_.param_groups().size() == 1, "flat_rmsprop: one parameter group, not ",
              optimizer_.param_groups().size());
  adopt_state();
}

void flat_rmsprop::allocate(const at::TensorOptions& options) {
  const auto& o =
      static_cast<const torch::optim::RMSpropOptions&>(optimizer_.param_groups().front().options());
  if (!squares_.defined())
    squares_ = at::zeros({layout_.total()}, options);
  if (o.momentum() > 0 && !momenta_.defined())
    momenta_ = at::zeros({layout_.total()}, options);
  if (o.centered() && !gradients_.defined())
    gradients_ = at::zeros({layout_.total()}, options);
}

torch::optim::RMSpropParamState& flat_rmsprop::create_state(std::size_t i) {
  auto state = std::make_unique<torch::optim::RMSpropParamState>();
  state->step(0);
  state->square_avg(layout_.view(squares_, i).zero_());
  if (momenta_.defined())
    state->momentum_buffer(layout_.view(momenta_, i).zero_());
  if (gradients_.defined())
    state->grad_avg(layout_.view(gradients_, i).zero_());
  return file_optimizer_state(optimizer_, parameters_[i], std::move(state));
}

void flat_rmsprop::adopt_state() {
  torch::NoGradGuard no_grad;
  std::fill(states_.begin(), states_.end(), nullptr);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    auto* state = find_optimizer_state<torch::optim::RMSpropParamState>(optimizer_, parameters_[i]);
    if (state == nullptr || !state->square_avg().defined())
      continue;
    allocate(parameters_[i].options());
    // Each buffer the state holds moves into its flat one (a state without one the options
    // want, written before the options changed, starts that buffer at zero as LibTorch would).
    const auto adopt = [&](const at::Tensor& held, const at::Tensor& flat, const char* what) {
      if (!flat.defined())
        return at::Tensor();
      auto view = layout_.view(flat, i);
      if (held.defined()) {
        layout_.check_state_size(held, i, what);
        if (held.data_ptr() != view.data_ptr())
          view.copy_(held);
      } else {
        view.zero_();
      }
      return view;
    };
    state->square_avg(adopt(state->square_avg(), squares_, "square_avg"));
    state->momentum_buffer(adopt(state->momentum_buffer(), momenta_, "momentum_buffer"));
    state->grad_avg(adopt(state->grad_avg(), gradients_, "grad_avg"));
    states_[i] = state;
  }
}

void flat_rmsprop::step(const at::Tensor& weights, const at::Tensor& grads, double lr) {
  layout_.check_step_buffers(weights, grads);
  const auto& o =
      static_cast<const torch::optim::RMSpropOptions&>(optimizer_.param_groups().front().options());
  torch::NoGradGuard no_grad;
  allocate(weights.options());
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (states_[i] == nullptr)
      states_[i] = &create_state(i);
  const rmsprop_factors f{static_cast<float>(o.alpha()), static_cast<float>(1 - o.alpha()),
                          static_cast<float>(o.eps()), static_cast<float>(o.momentum()),
                          static_cast<float>(-lr)};
  const bool momentum = o.momentum() > 0;
  // The decayed gradient comes from ATen's own add, whose vector kernel is one fused
  // multiply-add: where the decay nearly cancels the gradient, RMSprop divides the difference by
  // its own root, and a second rounding in the pass moved weights by 1e-4 in one step.
  const at::Tensor decayed = o.weight_decay() != 0 ? grads.add(weights, o.weight_decay()) : grads;
  if (weights.is_cpu()) {
    const auto run = pass_for(o.centered(), momentum);
    const rmsprop_buffers b{weights.data_ptr<float>(), decayed.data_ptr<float>(),
                            squares_.data_ptr<float>(),
                            momentum ? momenta_.data_ptr<float>() : nullptr,
                            o.centered() ? gradients_.data_ptr<float>() : nullptr};
    at::parallel_for(0, layout_.total(), fused_pass_grain,
                     [&](int64_t from, int64_t to) { run(b, f, from, to); });
  } else {
    aten_pass(weights, decayed, squares_, momentum ? momenta_ : at::Tensor(),
              o.centered() ? gradients_ : at::Tensor(), f);
  }
  for (auto* state : states_)
    state->step(state->step() + 1);
}

}  // namespace troupe
