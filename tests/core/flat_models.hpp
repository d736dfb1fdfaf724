// Parameters laid out as core/model/flat_parameters lays out a model (views of one flat weight
// buffer, their gradients views of one flat gradient buffer), and the same values as independent
// tensors for LibTorch's own optimizers: the fused optimizer steps' tests compare the two.
#pragma once

#include "core/optim/make_optimizer.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace troupe::testing {

using shape_list = std::vector<std::vector<int64_t>>;
const shape_list shapes{{33, 17}, {17}, {5, 3, 7}, {1}, {40000}};
// Past the fused passes' grain (32,768 elements) a hundredfold: the pass is split over the
// intra-op threads.
const shape_list large_shapes{{2048, 2049}, {3}};

inline int64_t total_elements(const shape_list& layout = shapes) {
  int64_t n = 0;
  for (const auto& s : layout)
    n += c10::multiply_integers(s);
  return n;
}

inline at::Tensor random_flat(uint64_t seed, double scale, const shape_list& layout = shapes) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn({total_elements(layout)}, gen, at::kFloat) * scale;
}

// Parameters that are views of one flat weight buffer, with gradients that are views of one
// flat gradient buffer: how core/model/flat_parameters lays out a model.
struct flat_model {
  at::Tensor weights, grads;
  std::vector<at::Tensor> params;

  explicit flat_model(const at::Tensor& initial, const shape_list& layout = shapes)
      : weights(initial.clone()), grads(at::zeros_like(initial)) {
    int64_t offset = 0;
    for (const auto& s : layout) {
      const auto n = c10::multiply_integers(s);
      auto p = weights.narrow(0, offset, n).view(s).detach().requires_grad_(true);
      p.mutable_grad() = grads.narrow(0, offset, n).view(s);
      params.push_back(p);
      offset += n;
    }
  }
};

// The same values as independent tensors, stepped by LibTorch's own SGD.
struct torch_model {
  std::vector<at::Tensor> params;

  explicit torch_model(const at::Tensor& initial, const shape_list& layout = shapes) {
    int64_t offset = 0;
    for (const auto& s : layout) {
      const auto n = c10::multiply_integers(s);
      params.push_back(initial.narrow(0, offset, n).reshape(s).clone().requires_grad_(true));
      offset += n;
    }
  }
  void set_grads(const at::Tensor& flat) {
    int64_t offset = 0;
    for (auto& p : params) {
      const auto n = p.numel();
      p.mutable_grad() = flat.narrow(0, offset, n).reshape(p.sizes()).clone();
      offset += n;
    }
  }
  at::Tensor flat() const {
    std::vector<at::Tensor> parts;
    for (const auto& p : params)
      parts.push_back(p.detach().reshape({-1}));
    return at::cat(parts);
  }
};

inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

/// The rate of step s: a cosine-like schedule, so that a step which read a stale rate shows.
inline double changing_rate(int s) {
  return 1e-2 * (0.55 + 0.45 * std::cos(0.1 * s));
}

/// Steps `Fused` (a fused pass over the state of LibTorch's `Optimizer`) and LibTorch's own
/// `Optimizer`, both made with `options`, on the same gradients at changing_rate(s); returns the
/// largest weight difference seen.
template <class Optimizer, class Fused, class Options>
double rated_side_by_side(const Options& options, int steps, const shape_list& layout = shapes) {
  const auto initial = random_flat(7, 1.0, layout);
  flat_model flat(initial, layout);
  torch_model theirs(initial, layout);
  Optimizer flat_optimizer(flat.params, options);
  Optimizer reference(theirs.params, options);
  Fused fused(flat_optimizer, flat.params);
  double worst = 0;
  for (int s = 0; s < steps; ++s) {
    const auto g = random_flat(500 + s, 0.1, layout);
    flat.grads.copy_(g);
    theirs.set_grads(g);
    fused.step(flat.weights, flat.grads, changing_rate(s));
    set_learning_rate(reference, changing_rate(s));
    reference.step();
    worst = std::max(worst, max_abs_diff(flat.weights, theirs.flat()));
  }
  return worst;
}

}  // namespace troupe::testing
