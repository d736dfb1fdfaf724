// Rebinds every parameter of a module, and its gradient, to a slice of one contiguous float32
// buffer each. A replica's whole gradient then travels as one tensor (one message, one sum)
// and its weights can be read or overwritten in one copy, with no per-parameter loop on the
// hot path. Backward accumulates into the gradient slices in place.
//
// A module's buffers (BatchNorm's running statistics) ride behind the parameters in both
// buffers, as float32 copies: in the weights their current values, in the gradient their values
// times the replica's share of the batch. Whatever combines gradients (the driver's sum, the
// ring, NCCL, the parameter server) then combines buffers too with no code of its own: a sync
// step leaves every replica with the batch-weighted mean of the replicas' statistics, a
// parameter server keeps those of the gradient it applied last, and local SGD averages them
// with the weights. The optimizer only ever sees the parameters.
//
// One more element rides behind the gradient (gradient_with_rows): the rows it was taken over.
// A sum of such buffers then says how many rows it holds, however it was summed and whoever
// was lost since (summary.json's rows per epoch count from it).
//
// Thread safety: none; the object belongs to the one actor that owns the module.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/nn/module.h>

#include <string>
#include <utility>
#include <vector>

namespace troupe {

using named_tensors = std::vector<std::pair<std::string, at::Tensor>>;
using tensor_layout = std::vector<std::pair<std::string, std::vector<int64_t>>>;

class flat_parameters {
 public:
  /// A module without buffers (the built-in layers): its parameters.
  explicit flat_parameters(torch::nn::Module& module);
  /// Moves the parameters' current values into the flat weight buffer, attaches a zeroed flat
  /// gradient buffer, and copies the buffers' values behind them. The tensors must outlive
  /// this object; parameters must be float32, buffers float32 or int64.
  flat_parameters(const named_tensors& parameters, const named_tensors& buffers);

  /// Parameters and buffer values.
  int64_t size() const { return weights_.numel(); }
  int64_t parameter_count() const { return parameter_count_; }

  /// [size] views: writing into them writes the module's parameters / gradients.
  const at::Tensor& weights() const { return weights_; }
  const at::Tensor& grads() const { return grads_; }
  /// [size + 1]: grads() and, behind it, the rows slot (set_rows). What a sum of replicas'
  /// gradients that carries its row count sums.
  const at::Tensor& gradient_with_rows() const { return with_rows_; }
  /// Writes `rows` into the rows slot (once the gradient is taken, for each step).
  void set_rows(int64_t rows);
  /// Makes `storage` (contiguous float32 [size + 1], on the buffers' device) the gradient buffer:
  /// the gradient so far is copied into it and every parameter's gradient becomes a view of
  /// it. Whoever owns `storage` keeps it alive as long as this object (host_reduction's
  /// shared-memory slot: the gradient is then summed where backward leaves it, no copy in or
  /// out). Throws std::invalid_argument for storage of another shape, type or device.
  void move_grads_into(at::Tensor storage);
  /// The parameters' part of grads(), what clipping and the optimizer act on.
  at::Tensor parameter_grads() const { return grads_.narrow(0, 0, parameter_count_); }

  /// Copies the buffers into their slots of the weights, and into those of the gradient times
  /// `share` (the replica's share of the global batch). Call after a training forward.
  void gather_buffers(double share);
  /// Makes the buffers (and their slots in the weights) the values their gradient slots hold
  /// after gradients were combined.
  void adopt_combined_buffers();
  /// Makes the buffers the values of their slots in the weights (after the weights were set).
  void load_buffers();

  /// Names in module order (PyTorch's state_dict order: parameters, then buffers), with their
  /// shapes.
  const tensor_layout& layout() const { return layout_; }

 private:
  /// Points each parameter's gradient at its slice of grads_.
  void bind_grads();

  at::Tensor weights_;
  at::Tensor with_rows_;  ///< [size + 1]
  at::Tensor grads_;      ///< its first size elements
  int64_t parameter_count_ = 0;
  std::vector<at::Tensor> parameters_;  ///< the module's, sharing their TensorImpl
  std::vector<at::Tensor> buffers_;
  tensor_layout layout_;
};

/// The rows slot of a gradient_with_rows buffer (or of a sum of them), read on the host: the
/// rows the summed gradients were taken over. Exact for up to 2^24 rows a step (float32).
int64_t rows_in(const at::Tensor& gradient_with_rows);

/// Cuts a flat weight vector back into named, independently owned tensors following `layout`.
named_tensors unflatten(const at::Tensor& flat, const tensor_layout& layout);

}  // namespace troupe
