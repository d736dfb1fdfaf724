#include "core/model/flat_parameters.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace troupe {
namespace {

named_tensors named_parameters_of(torch::nn::Module& module) {
  named_tensors out;
  for (auto& p : module.named_parameters(/*recurse=*/true))
    out.emplace_back(p.key(), p.value());
  return out;
}

}  // namespace

flat_parameters::flat_parameters(torch::nn::Module& module)
    : flat_parameters(named_parameters_of(module), {}) {}

flat_parameters::flat_parameters(const named_tensors& parameters, const named_tensors& buffers) {
  int64_t total = 0;
  for (const auto& p : parameters)
    parameter_count_ += p.second.numel();
  total = parameter_count_;
  for (const auto& b : buffers)
    total += b.second.numel();
  // The buffers live where the module does (a GPU worker moves its model before flattening).
  const auto options =
      at::TensorOptions(at::kFloat)
          .device(parameters.empty() ? at::Device(at::kCPU) : parameters[0].second.device());
  weights_ = at::empty({total}, options);
  with_rows_ = at::zeros({total + 1}, options);
  grads_ = with_rows_.narrow(0, 0, total);

  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (const auto& [name, tensor] : parameters) {
    auto param = tensor;  // shares the TensorImpl the module and optimizer hold
    TORCH_CHECK(param.scalar_type() == at::kFloat, "flat_parameters: ", name, " is not float32");
    const int64_t n = param.numel();
    auto weight_view = weights_.narrow(0, offset, n).view(param.sizes());
    weight_view.copy_(param);
    // set_data keeps the parameter's identity (the optimizer and module still hold it) while
    // its storage becomes the slice of the flat buffer.
    param.set_data(weight_view);
    parameters_.push_back(param);
    layout_.emplace_back(name, param.sizes().vec());
    offset += n;
  }
  bind_grads();
  for (const auto& [name, buffer] : buffers) {
    TORCH_CHECK(buffer.scalar_type() == at::kFloat || buffer.scalar_type() == at::kLong,
                "flat_parameters: buffer ", name, " is neither float32 nor int64");
    buffers_.push_back(buffer);
    layout_.emplace_back(name, buffer.sizes().vec());
  }
  gather_buffers(1.0);
}

void flat_parameters::bind_grads() {
  int64_t offset = 0;
  for (auto& param : parameters_) {
    const int64_t n = param.numel();
    param.mutable_grad() = grads_.narrow(0, offset, n).view(param.sizes());
    offset += n;
  }
}

void flat_parameters::move_grads_into(at::Tensor storage) {
  if (!storage.defined() || storage.dim() != 1 || storage.numel() != size() + 1 ||
      !storage.is_contiguous() || storage.scalar_type() != at::kFloat ||
      storage.device() != grads_.device())
    throw std::invalid_argument("flat_parameters: gradient storage must be a contiguous float32 [" +
                                std::to_string(size() + 1) + "] on " + grads_.device().str());
  storage.copy_(with_rows_);
  with_rows_ = std::move(storage);
  grads_ = with_rows_.narrow(0, 0, size());
  bind_grads();
}

void flat_parameters::set_rows(int64_t rows) {
  with_rows_.narrow(0, size(), 1).fill_(static_cast<double>(rows));
}

int64_t rows_in(const at::Tensor& gradient_with_rows) {
  const auto n = gradient_with_rows.numel();
  if (n < 1)
    throw std::invalid_argument("rows_in: an empty gradient has no rows slot");
  return static_cast<int64_t>(std::llround(gradient_with_rows[n - 1].item<double>()));
}

void flat_parameters::gather_buffers(double share) {
  if (buffers_.empty())
    return;
  torch::NoGradGuard no_grad;
  int64_t offset = parameter_count_;
  for (const auto& b : buffers_) {
    weights_.narrow(0, offset, b.numel()).copy_(b.reshape({-1}));
    offset += b.numel();
  }
  const auto count = size() - parameter_count_;
  auto slots = grads_.narrow(0, parameter_count_, count);
  slots.copy_(weights_.narrow(0, parameter_count_, count));
  if (share != 1.0)
    slots.mul_(share);
}

void flat_parameters::adopt_combined_buffers() {
  if (buffers_.empty())
    return;
  torch::NoGradGuard no_grad;
  const auto count = size() - parameter_count_;
  weights_.narrow(0, parameter_count_, count).copy_(grads_.narrow(0, parameter_count_, count));
  load_buffers();
}

void flat_parameters::load_buffers() {
  torch::NoGradGuard no_grad;
  int64_t offset = parameter_count_;
  for (auto& b : buffers_) {
    auto values = weights_.narrow(0, offset, b.numel()).view(b.sizes());
    // Integer buffers (BatchNorm's num_batches_tracked) travel as floats: a weighted mean of
    // equal counts comes back within rounding of the count.
    b.copy_(b.is_floating_point() ? values : values.round());
    offset += b.numel();
  }
}

named_tensors unflatten(const at::Tensor& flat, const tensor_layout& layout) {
  named_tensors out;
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
