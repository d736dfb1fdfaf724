// Rebinds every parameter of a module, and its gradient, to a slice of one contiguous float32
// buffer each. A replica's whole gradient then travels as one tensor (one message, one sum)
// and its weights can be read or overwritten in one copy, with no per-parameter loop on the
// hot path. Backward accumulates into the gradient slices in place.
//
// Thread safety: none; the object belongs to the one actor that owns the module.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <string>
#include <utility>
#include <vector>

namespace troupe {

class flat_parameters {
 public:
  /// Moves the module's current parameter values into the flat weight buffer and attaches a
  /// zeroed flat gradient buffer. The module must outlive this object.
  explicit flat_parameters(torch::nn::Module& module);

  int64_t size() const { return weights_.numel(); }

  /// [size] views: writing into them writes the module's parameters / gradients.
  const at::Tensor& weights() const { return weights_; }
  const at::Tensor& grads() const { return grads_; }

  /// Parameter names in module order (PyTorch's state_dict order), with their shapes.
  const std::vector<std::pair<std::string, std::vector<int64_t>>>& layout() const {
    return layout_;
  }

 private:
  at::Tensor weights_;
  at::Tensor grads_;
  std::vector<std::pair<std::string, std::vector<int64_t>>> layout_;
};

/// Cuts a flat weight vector back into named, independently owned tensors following `layout`.
std::vector<std::pair<std::string, at::Tensor>> unflatten(
    const at::Tensor& flat,
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& layout);

}  // namespace troupe
