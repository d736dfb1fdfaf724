// Where each of a model's parameters sits in a flat buffer laid out as core/model/flat_parameters
// lays out its weights: one after another, from the first element on. The fused optimizer steps
// (flat_sgd, flat_adam) keep their state in such buffers and hand the LibTorch optimizer views.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace troupe {

class flat_layout {
 public:
  /// Float32 parameters, in buffer order. Throws c10::Error for another type.
  explicit flat_layout(const std::vector<at::Tensor>& parameters);

  std::size_t count() const { return shapes_.size(); }
  int64_t total() const { return offsets_.back(); }
  int64_t begin(std::size_t i) const { return offsets_[i]; }
  int64_t end(std::size_t i) const { return offsets_[i + 1]; }
  /// Parameter i's slice of `flat` (a [total()] tensor), shaped as the parameter.
  at::Tensor view(const at::Tensor& flat, std::size_t i) const;
  /// Throws c10::Error unless `weights` and `grads` are contiguous float32 [total()], as a step
  /// needs them.
  void check_step_buffers(const at::Tensor& weights, const at::Tensor& grads) const;
  /// Throws std::runtime_error unless `state` (the optimizer's `what` for parameter i, as a
  /// loaded state holds it) is float32 with the parameter's number of elements.
  void check_state_size(const at::Tensor& state, std::size_t i, const char* what) const;

 private:
  std::vector<std::vector<int64_t>> shapes_;
  std::vector<int64_t> offsets_;  ///< parameter i begins at offsets_[i]; the last is the total
};

/// A fused pass splits over the intra-op threads in pieces of at least this many elements:
/// ATen's own grain for element-wise loops. Over two threads the MLP's SGD pass (235,146
/// weights) took 29 µs against 78 on one (each half stays in its core's L2), and troupe
/// 1 replica x 2 threads trained 7% faster (bench/sync_overhead, 5 alternations).
inline constexpr int64_t fused_pass_grain = 32768;

}  // namespace troupe
