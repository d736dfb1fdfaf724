#include "core/optim/flat_sgd.hpp"

#include "core/optim/optimizer_state_key.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <algorithm>
#include <array>
#include <memory>
#include <utility>

namespace troupe {

namespace {

// SGD's options as ATen applies them to float32 tensors: rounded to float32.
struct sgd_factors {
  float lr = 0;
  float decay = 0;     // weight_decay
  float momentum = 0;  // the old buffer's factor
  float keep = 0;      // 1 - dampening: the gradient's factor in the buffer
};

struct sgd_buffers {
  float* weights;
  const float* grads;
  float* momenta;  // unused without momentum
};

// One pass over elements [begin, end): LibTorch's SGD (torch/csrc/api/src/optim/sgd.cpp)
// element for element. The flags are template parameters so that each combination compiles
// to a loop without branches, which the compiler vectorizes.
template <bool Decay, bool Momentum, bool First, bool Nesterov>
void sgd_pass(const sgd_buffers& b, const sgd_factors& f, int64_t begin, int64_t end) {
  float* __restrict w = b.weights;
  const float* __restrict g = b.grads;
  float* __restrict m = b.momenta;
  for (int64_t i = begin; i < end; ++i) {
    float d = g[i];
    if constexpr (Decay)
      d += f.decay * w[i];
    if constexpr (Momentum) {
      const float buffer = First ? d : m[i] * f.momentum + f.keep * d;
      m[i] = buffer;
      d = Nesterov ? d + f.momentum * buffer : buffer;
    }
    w[i] -= f.lr * d;
  }
}

using sgd_pass_fn = void (*)(const sgd_buffers&, const sgd_factors&, int64_t, int64_t);

template <std::size_t... Flags>
constexpr std::array<sgd_pass_fn, sizeof...(Flags)> sgd_passes(std::index_sequence<Flags...>) {
  return {&sgd_pass<(Flags & 1) != 0, (Flags & 2) != 0, (Flags & 4) != 0, (Flags & 8) != 0>...};
}

sgd_pass_fn pick_pass(bool decay, bool momentum, bool first, bool nesterov) {
  static constexpr auto passes = sgd_passes(std::make_index_sequence<16>());
  return passes[(decay ? 1 : 0) | (momentum ? 2 : 0) | (first ? 4 : 0) | (nesterov ? 8 : 0)];
}

// The same step with ATen calls, for buffers off the host (a GPU's).
void aten_pass(at::Tensor w, const at::Tensor& g, at::Tensor m, const sgd_factors& f, bool momentum,
               bool first, bool nesterov) {
  at::Tensor d = f.decay != 0 ? g.add(w, f.decay) : g;
  if (momentum) {
    if (first)
      m.copy_(d);
    else
      m.mul_(f.momentum).add_(d, f.keep);
    d = nesterov ? d.add(m, f.momentum) : m;
  }
  w.add_(d, -f.lr);
}

}  // namespace

flat_sgd::flat_sgd(torch::optim::SGD& optimizer, std::vector<at::Tensor> parameters)
    : optimizer_(optimizer),
      parameters_(std::move(parameters)),
      layout_(parameters_),
      states_(parameters_.size()) {
  TORCH_CHECK(optimizer_.param_groups().size() == 1, "flat_sgd: one parameter group, not ",
              optimizer_.param_groups().size());
  adopt_state();
}

torch::optim::SGDParamState& flat_sgd::create_state(std::size_t i) {
  auto state = std::make_unique<torch::optim::SGDParamState>();
  state->momentum_buffer(layout_.view(momenta_, i));
  return file_optimizer_state(optimizer_, parameters_[i], std::move(state));
}

bool flat_sgd::splits_over_threads() {
#ifdef INTRA_OP_PARALLEL
  return true;
#else
  return false;
#endif
}

void flat_sgd::adopt_state() {
  torch::NoGradGuard no_grad;
  // None held until adopted: a throw below leaves no pointer into a state the load replaced.
  std::fill(states_.begin(), states_.end(), nullptr);
  for (std::size_t i = 0; i < parameters_.size(); ++i) {
    auto* state = find_optimizer_state<torch::optim::SGDParamState>(optimizer_, parameters_[i]);
    if (state == nullptr || !state->momentum_buffer().defined())
      continue;
    const auto buffer = state->momentum_buffer();
    layout_.check_state_size(buffer, i, "momentum buffer");
    if (!momenta_.defined())
      momenta_ = at::zeros({layout_.total()}, parameters_[i].options());
    auto slice = layout_.view(momenta_, i);
    if (buffer.data_ptr() != slice.data_ptr())
      slice.copy_(buffer);
    state->momentum_buffer(slice);
    states_[i] = state;
  }
}

void flat_sgd::step(const at::Tensor& weights, const at::Tensor& grads) {
  step(weights, grads, optimizer_.param_groups().front().options().get_lr());
}

void flat_sgd::step(const at::Tensor& weights, const at::Tensor& grads, double lr) {
  layout_.check_step_buffers(weights, grads);
  const int64_t total = layout_.total();
  torch::NoGradGuard no_grad;
  const auto& options =
      static_cast<const torch::optim::SGDOptions&>(optimizer_.param_groups().front().options());
  const sgd_factors f{static_cast<float>(lr), static_cast<float>(options.weight_decay()),
                      static_cast<float>(options.momentum()),
                      static_cast<float>(1 - options.dampening())};
  const bool momentum = options.momentum() != 0;
  if (momentum && !momenta_.defined())
    momenta_ = at::empty({total}, weights.options());
  const bool on_host = weights.is_cpu();
  // Elements [begin, end), whose momentum buffers are fresh (`first`) or all exist.
  auto pass = [&](int64_t begin, int64_t end, bool first) {
    if (!on_host) {
      const auto slice = [&](const at::Tensor& t) { return t.narrow(0, begin, end - begin); };
      aten_pass(slice(weights), slice(grads), momentum ? slice(momenta_) : at::Tensor(), f,
                momentum, first, options.nesterov());
      return;
    }
    const auto run = pick_pass(f.decay != 0, momentum, first, options.nesterov());
    const sgd_buffers b{weights.data_ptr<float>(), grads.data_ptr<float>(),
                        momentum ? momenta_.data_ptr<float>() : nullptr};
    at::parallel_for(begin, end, fused_pass_grain,
                     [&](int64_t from, int64_t to) { run(b, f, from, to); });
  };
  std::size_t fresh = 0;
  for (const auto* state : states_)
    fresh += state == nullptr ? 1 : 0;
  if (!momentum || fresh == 0 || fresh == states_.size()) {
    pass(0, total, momentum && fresh > 0);
  } else {  // some buffers were restored and others not: each parameter as LibTorch would
    for (std::size_t i = 0; i < parameters_.size(); ++i)
      pass(layout_.begin(i), layout_.end(i), states_[i] == nullptr);
  }
  if (!momentum)
    return;
  for (std::size_t i = 0; i < parameters_.size(); ++i)
    if (states_[i] == nullptr)
      states_[i] = &create_state(i);
}

}  // namespace troupe
