#include "core/ensemble/stacked_model.hpp"

#include "core/errors.hpp"
#include "core/model/flat_parameters.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/modules/conv.h>
#include <torch/nn/modules/linear.h>
#include <torch/version.h>

#include <map>

namespace troupe {
namespace {

// Where the stacked tensor's member dimension is: not yet split (the input, shared by all),
// leading ([K, B, ...]), or folded into the channels ([B, K * C, H, W]) for grouped convolution.
enum class layout { shared, members_first, grouped };

bool is_pointwise(const std::string& kind) {
  return kind == "torch::nn::ReLUImpl" || kind == "torch::nn::TanhImpl" ||
         kind == "torch::nn::GELUImpl" || kind == "torch::nn::MaxPool2dImpl";
}

}  // namespace

stacked_model::stacked_model(const torch::nn::Sequential& base,
                             const std::vector<at::Tensor>& initial, c10::Device device)
    : members_(static_cast<int64_t>(initial.size())) {
  TORCH_CHECK(members_ > 0, "a stacked model needs at least one member");
  std::vector<std::pair<std::string, std::vector<int64_t>>> layout_of_base;
  for (const auto& p : base->named_parameters())
    layout_of_base.emplace_back(p.key(), p.value().sizes().vec());
  // Every member's named tensors, cut out of its flat initial weights.
  std::vector<std::map<std::string, at::Tensor>> named(initial.size());
  for (std::size_t k = 0; k < initial.size(); ++k)
    for (auto& [name, tensor] : unflatten(initial[k], layout_of_base))
      named[k].emplace(name, tensor);
  const auto stack = [&](const std::string& key) {
    std::vector<at::Tensor> parts;
    for (const auto& member : named)
      parts.push_back(member.at(key));
    return at::stack(parts).to(device).set_requires_grad(true);
  };

  auto children = base->named_children();
  for (std::size_t i = 0; i < children.size(); ++i) {
    const auto& name = children[i].key();
    const auto& module = children[i].value();
    const std::string kind = module->name();
    layer l;
    l.name = name;
    if (kind == "torch::nn::LinearImpl" || kind == "torch::nn::Conv2dImpl") {
      l.kind = kind == "torch::nn::LinearImpl" ? layer_kind::linear : layer_kind::conv;
      l.weight = stack(name + ".weight");
      l.bias = stack(name + ".bias");
      if (l.kind == layer_kind::conv) {
        const auto& options = std::dynamic_pointer_cast<torch::nn::Conv2dImpl>(module)->options;
        // LibTorch's variants are c10's own before 2.1 and std::variant since (GPU builds).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 1)
        const auto& pad = std::get<torch::ExpandingArray<2>>(options.padding());
#else
        const auto& pad = c10::get<torch::ExpandingArray<2>>(options.padding());
#endif
        l.padding = (*pad)[0];
      }
    } else if (kind == "torch::nn::FlattenImpl") {
      l.kind = layer_kind::flatten;
    } else if (is_pointwise(kind)) {
      l.kind = layer_kind::pointwise;
      l.module = *(base->begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      throw job_error({"/ensemble: layer " + name + " (" + kind +
                       ") cannot be stacked; stackable kinds are Linear, Conv2d, ReLU, Tanh, "
                       "GELU, MaxPool2d and Flatten"});
    }
    layers_.push_back(std::move(l));
  }
}

at::Tensor stacked_model::forward(const at::Tensor& inputs, bool per_member) const {
  const int64_t k = members_;
  at::Tensor x = inputs;
  auto where = per_member ? layout::members_first : layout::shared;
  for (const auto& l : layers_) {
    switch (l.kind) {
      case layer_kind::pointwise:
        x = l.module.forward(x);
        break;
      case layer_kind::flatten:
        if (where == layout::grouped) {  // [B, K*C, H, W] -> [K, B, C*H*W]
          x = x.reshape({x.size(0), k, -1}).transpose(0, 1);
          where = layout::members_first;
        } else if (where == layout::members_first) {
          x = x.reshape({k, x.size(1), -1});
        } else {
          x = x.flatten(1);
        }
        break;
      case layer_kind::conv: {
        if (where == layout::shared) {  // every member sees the same channels
          x = x.repeat({1, k, 1, 1});
        } else if (where == layout::members_first) {  // [K, B, C, H, W] -> [B, K*C, H, W]
          x = x.transpose(0, 1).reshape({x.size(1), -1, x.size(3), x.size(4)});
        }
        where = layout::grouped;
        const auto& w = l.weight;
        x = at::conv2d(x, w.reshape({k * w.size(1), w.size(2), w.size(3), w.size(4)}),
                       l.bias.reshape({-1}), /*stride=*/{1, 1}, {l.padding, l.padding},
                       /*dilation=*/{1, 1}, /*groups=*/k);
        break;
      }
      case layer_kind::linear: {
        const auto out = l.weight.size(1);
        if (where == layout::shared) {
          // One wide GEMM: [B, in] x [in, K*out], then split the columns by member.
          const auto in = l.weight.size(2);
          x = at::addmm(l.bias.reshape({-1}), x, l.weight.reshape({k * out, in}).t())
                  .reshape({x.size(0), k, out})
                  .transpose(0, 1);
        } else {
          x = at::baddbmm(l.bias.unsqueeze(1), x, l.weight.transpose(1, 2));
        }
        where = layout::members_first;
        break;
      }
    }
  }
  return x;
}

std::vector<at::Tensor> stacked_model::parameters() const {
  std::vector<at::Tensor> params;
  for (const auto& l : layers_)
    if (l.weight.defined()) {
      params.push_back(l.weight);
      params.push_back(l.bias);
    }
  return params;
}

std::vector<std::pair<std::string, at::Tensor>> stacked_model::member_weights(int64_t k) const {
  torch::NoGradGuard no_grad;
  std::vector<std::pair<std::string, at::Tensor>> named;
  for (const auto& l : layers_)
    if (l.weight.defined()) {
      named.emplace_back(l.name + ".weight", l.weight[k].to(at::kCPU, false, /*copy=*/true));
      named.emplace_back(l.name + ".bias", l.bias[k].to(at::kCPU, false, /*copy=*/true));
    }
  return named;
}

}  // namespace troupe
