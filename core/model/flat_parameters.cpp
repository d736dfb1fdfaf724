#include "core/model/flat_parameters.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

namespace troupe {

flat_parameters::flat_parameters(torch::nn::Module& module) {
  auto params = module.named_parameters(/*recurse=*/true);
  int64_t total = 0;
  for (const auto& p : params)
    total += p.value().numel();
  // The buffers live where the module does (a GPU worker moves its model before flattening).
  const auto options =
      at::TensorOptions(at::kFloat)
          .device(params.is_empty() ? at::Device(at::kCPU) : params[0].value().device());
  weights_ = at::empty({total}, options);
  grads_ = at::zeros({total}, options);

  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& p : params) {
    auto& param = p.value();
    TORCH_CHECK(param.scalar_type() == at::kFloat, "flat_parameters: ", p.key(), " is not float32");
    const int64_t n = param.numel();
    auto weight_view = weights_.narrow(0, offset, n).view(param.sizes());
    weight_view.copy_(param);
    // set_data keeps the parameter's identity (the optimizer and module still hold it) while
    // its storage becomes the slice of the flat buffer.
    param.set_data(weight_view);
    param.mutable_grad() = grads_.narrow(0, offset, n).view(param.sizes());
    layout_.emplace_back(p.key(), param.sizes().vec());
    offset += n;
  }
}

std::vector<std::pair<std::string, at::Tensor>> unflatten(
    const at::Tensor& flat,
    const std::vector<std::pair<std::string, std::vector<int64_t>>>& layout) {
  std::vector<std::pair<std::string, at::Tensor>> out;
  int64_t offset = 0;
  for (const auto& [name, shape] : layout) {
    int64_t n = 1;
    for (auto d : shape)
      n *= d;
    TORCH_CHECK(offset + n <= flat.numel(), "unflatten: flat vector too short for ", name);
    out.emplace_back(name, flat.narrow(0, offset, n).view(shape).clone());
    offset += n;
  }
  TORCH_CHECK(offset == flat.numel(), "unflatten: flat vector has ", flat.numel(),
              " elements, layout needs ", offset);
  return out;
}

}  // namespace troupe
