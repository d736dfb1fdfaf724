#include "core/optim/flat_adam.hpp"

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

// Adam's factors for one run of parameters with the same step count, rounded to float32 where
// ATen rounds them.
struct adam_factors {
  float beta1 = 0, keep1 = 0;  // exp_avg's factor, and the gradient's (1 - beta1)
  float beta2 = 0, keep2 = 0;  // exp_avg_sq's, and the squared gradient's (1 - beta2)
  float decay = 0;             // weight_decay added to the gradient (Adam)
  float shrink = 1;            // 1 - lr x weight_decay, the weights' factor first (AdamW)
  float root_correction2 = 0;  // sqrt(1 - beta2^step)
  float eps = 0;
  float neg_step_size = 0;  // -lr / (1 - beta1^step)
};

struct adam_buffers {
  float* weights;
  const float* grads;
  float* averages;
  float* squares;
};

// One pass over elements [begin, end): LibTorch's Adam (torch/csrc/api/src/optim/adam.cpp)
// element for element, each operation in ATen's order. This file is compiled without errno for
// the square root (CMakeLists.txt): with it, the loop cannot be vectorized.
template <bool Decay, bool Shrink>
void adam_pass(const adam_buffers& b, const adam_factors& f, int64_t begin, int64_t end) {
  float* __restrict w = b.weights;
  const float* __restrict g = b.grads;
  float* __restrict m = b.averages;
  float* __restrict v = b.squares;
  for (int64_t i = begin; i < end; ++i) {
    if constexpr (Shrink)
      w[i] *= f.shrink;
    float d = g[i];
    if constexpr (Decay)
      d += f.decay * w[i];
    const float average = m[i] * f.beta1 + f.keep1 * d;
    const float square = v[i] * f.beta2 + f.keep2 * d * d;
    m[i] = average;
    v[i] = square;
    const float denominator = std::sqrt(square) / f.root_correction2 + f.eps;
    w[i] += f.neg_step_size * average / denominator;
  }
}

// The same step with ATen calls, for buffers off the host.
void aten_pass(at::Tensor w, const at::Tensor& g, at::Tensor m, at::Tensor v,
               const adam_factors& f) {
  if (f.shrink != 1)
    w.mul_(f.shrink);
  const at::Tensor d = f.decay != 0 ? g.add(w, f.decay) : g;
  m.mul_(f.beta1).add_(d, f.keep1);
  v.mul_(f.beta2).addcmul_(d, d, f.keep2);
  w.addcdiv_(m, (v.sqrt() / f.root_correction2).add_(f.eps), f.neg_step_size);
}

template <class Options>
adam_factors factors_at(const Options& o, int64_t step, double lr, bool decoupled) {
  const double beta1 = std::get<0>(o.betas());
  const double beta2 = std::get<1>(o.betas());
  const double correction1 = 1 - std::pow(beta1, static_cast<double>(step));
  const double correction2 = 1 - std::pow(beta2, static_cast<double>(step));
  return {static_cast<float>(beta1),
          static_cast<float>(1 - beta1),
          static_cast<float>(beta2),
          static_cast<float>(1 - beta2),
          decoupled ? 0.0F : static_cast<float>(o.weight_decay()),
          decoupled ? static_cast<float>(1 - lr * o.weight_decay()) : 1.0F,
          static_cast<float>(std::sqrt(correction2)),
          static_cast<float>(o.eps()),
          static_cast<float>(-(lr / correction1))};
}

using pass_function = void (*)(const adam_buffers&, const adam_factors&, int64_t, int64_t);

pass_function pass_for(const adam_factors& f) {
  if (f.shrink != 1)
    return &adam_pass<false, true>;
  return f.decay != 0 ? &adam_pass<true, false> : &adam_pass<false, false>;
}

}  // namespace

template <class Optimizer>
basic_flat_adam<Optimizer>::basic_flat_adam(Optimizer& optimizer,
                                            std::vector<at::Tensor> parameters)
    : optimizer_(optimizer),
      parameters_(std::move(parameters)),
      layout_(parameters_),
      states_(parameters_.size()) {
  TORCH_CHECK(optimizer_.param_groups().size() == 1, "flat_adam: one parameter group, not ",
              optimizer_.param_groups().size());
  adopt_state();
}

template <class Optimizer>
typename basic_flat_adam<Optimizer>::state_type& basic_flat_adam<Optimizer>::create_state(
    std::size_t i) {
  auto state = std::make_unique<state_type>();
  state->step(0);
  state->exp_avg(layout_.view(averages_, i).zero_());
  state->exp_avg_sq(layout_.view(squares_, i).zero_());
  return file_optimizer_state(optimizer_, parameters_[i], std::move(state));
}

template <class Optimizer>
bool basic_flat_adam<Optimizer>::splits_over_threads() {
#ifdef INTRA_OP_PARALLEL
  return true;
#else
  return false;
#endif
}

template <class Optimizer>
void basic_flat_adam<Optimizer>::adopt_state() {
  torch::NoGradGuard no_grad;
  // None held until adopted: a throw below leaves no pointer into a state the load replaced.
  std::fill(states_.begin(), states_.end(), nullptr);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    auto* state = find_optimizer_state<state_type>(optimizer_, parameters_[i]);
    if (state == nullptr || !state->exp_avg().defined() || !state->exp_avg_sq().defined())
      continue;
    layout_.check_state_size(state->exp_avg(), i, "exp_avg");
    layout_.check_state_size(state->exp_avg_sq(), i, "exp_avg_sq");
    if (!averages_.defined()) {
      averages_ = at::zeros({layout_.total()}, parameters_[i].options());
      squares_ = at::zeros({layout_.total()}, parameters_[i].options());
    }
    auto average = layout_.view(averages_, i);
    auto square = layout_.view(squares_, i);
    if (state->exp_avg().data_ptr() != average.data_ptr())
      average.copy_(state->exp_avg());
    if (state->exp_avg_sq().data_ptr() != square.data_ptr())
      square.copy_(state->exp_avg_sq());
    state->exp_avg(average);
    state->exp_avg_sq(square);
    states_[i] = state;
  }
}

template <class Optimizer>
void basic_flat_adam<Optimizer>::step(const at::Tensor& weights, const at::Tensor& grads) {
  step(weights, grads, optimizer_.param_groups().front().options().get_lr());
}

template <class Optimizer>
void basic_flat_adam<Optimizer>::step(const at::Tensor& weights, const at::Tensor& grads,
                                      double lr) {
  layout_.check_step_buffers(weights, grads);
  auto& options = static_cast<options_type&>(optimizer_.param_groups().front().options());
  if (options.amsgrad()) {  // LibTorch's own step, which reads the rate from its options
    options.lr(lr);
    optimizer_.step();
    return;
  }
  torch::NoGradGuard no_grad;
  if (!averages_.defined()) {
    averages_ = at::zeros({layout_.total()}, weights.options());
    squares_ = at::zeros({layout_.total()}, weights.options());
  }
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (states_[i] == nullptr)
      states_[i] = &create_state(i);
  // Runs of parameters with equal step counts: all of them, but for a state restored in part.
  for (std::size_t first = 0; first < parameters_.size();) {
    const int64_t count = states_[first]->step() + 1;
    std::size_t last = first;
    while (last + 1 < parameters_.size() && states_[last + 1]->step() + 1 == count)
      ++last;
    const auto f = factors_at(options, count, lr, decoupled);
    const int64_t begin = layout_.begin(first);
    const int64_t end = layout_.end(last);
    if (weights.is_cpu()) {
      const auto run = pass_for(f);
      const adam_buffers b{weights.data_ptr<float>(), grads.data_ptr<float>(),
                           averages_.data_ptr<float>(), squares_.data_ptr<float>()};
      at::parallel_for(begin, end, fused_pass_grain,
                       [&](int64_t from, int64_t to) { run(b, f, from, to); });
    } else {
      const auto slice = [&](const at::Tensor& t) { return t.narrow(0, begin, end - begin); };
      aten_pass(slice(weights), slice(grads), slice(averages_), slice(squares_), f);
    }
    for (std::size_t i = first; i <= last; ++i)
      states_[i]->step(count);
    first = last + 1;
  }
}

template class basic_flat_adam<torch::optim::Adam>;
template class basic_flat_adam<torch::optim::AdamW>;

}  // namespace troupe
