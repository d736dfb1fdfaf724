// K models of one architecture trained as one stacked model: every weight gets a leading member
// dimension ([K, ...]), fully connected layers run as one batched matrix product (baddbmm, or a
// single wide GEMM while the input is still shared by all members), and convolutions run as one
// grouped convolution over the members' channels (groups = K). Activations, pooling and flatten
// apply to the stacked tensors as they are. The loss is the sum of the members' mean losses, so
// each member's gradient is exactly the one it would get trained alone, and one optimizer over
// the stacked parameters steps all members at once (SGD and Adam act elementwise).
//
// Layer kinds that can be stacked: Linear, Conv2d, ReLU, Tanh, GELU, MaxPool2d, Flatten. Any
// other kind (batch norm, dropout, ...) is refused with job_error: it would mix the members or
// needs per-member state this model does not keep.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>
#include <torch/nn/modules/container/sequential.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

class stacked_model {
 public:
  /// Stacks `initial.size()` copies of `base` on `device`; member k starts from `initial[k]`, a
  /// flat weight vector in `base`'s parameter order (as initial_weights() gives).
  stacked_model(const torch::nn::Sequential& base, const std::vector<at::Tensor>& initial,
                c10::Device device = c10::kCPU);

  int64_t members() const { return members_; }

  /// `inputs` is [B, row...] shared by every member, or (`per_member`) [K, B, row...] one batch
  /// per member. Returns logits [K, B, classes].
  at::Tensor forward(const at::Tensor& inputs, bool per_member = false) const;

  /// The stacked parameters, each [K, ...] (weights and biases in layer order).
  std::vector<at::Tensor> parameters() const;

  /// Member k as a standard state dict: the same names and shapes as the unstacked model, on the
  /// host.
  std::vector<std::pair<std::string, at::Tensor>> member_weights(int64_t k) const;

 private:
  enum class layer_kind { linear, conv, pointwise, flatten };
  struct layer {
    std::string name;
    layer_kind kind = layer_kind::pointwise;
    at::Tensor weight;  ///< [K, out, in] or [K, out, in, kh, kw]
    at::Tensor bias;    ///< [K, out]
    int64_t padding = 0;
    /// pointwise: applied to the stacked tensor as it is (forward is not const in LibTorch).
    mutable torch::nn::AnyModule module;
  };

  int64_t members_;
  std::vector<layer> layers_;
};

}  // namespace troupe
