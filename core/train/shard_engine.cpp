#include "core/train/shard_engine.hpp"

#include "core/optim/optimizer_bytes.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <stdexcept>

namespace troupe {

shard_engine::shard_engine(const optimizer_config& optimizer, const tensor_layout& layout,
                           const server_shard& shard, const at::Tensor& initial)
    : shard_(shard) {
  const auto host = initial.to(at::kCPU).to(at::kFloat).contiguous();
  if (shard.first_parameter + shard.parameters > static_cast<int64_t>(layout.size()) ||
      shard.begin + shard.size > host.numel())
    throw std::invalid_argument("shard_engine: the shard lies outside the model");
  named_tensors parameters;
  int64_t offset = shard.begin;
  for (int64_t i = shard.first_parameter; i < shard.first_parameter + shard.parameters; ++i) {
    const auto& [name, shape] = layout[static_cast<std::size_t>(i)];
    int64_t n = 1;
    for (auto d : shape)
      n *= d;
    auto p = host.narrow(0, offset, n).clone().view(shape).set_requires_grad(true);
    parameters.emplace_back(name, p);
    parameters_.push_back(p);
    offset += n;
  }
  named_tensors buffers;
  if (const auto buffered = shard.size - shard.parameter_values; buffered > 0) {
    buffer_values_ = host.narrow(0, offset, buffered).clone();
    buffers.emplace_back("buffer values", buffer_values_);
  }
  flat_ = std::make_unique<flat_parameters>(parameters, buffers);
  optimizer_ = std::make_unique<flat_optimizer>(optimizer, *flat_, parameters_);
}

shard_engine::~shard_engine() = default;

void shard_engine::apply(const at::Tensor& gradient, double lr) {
  if (gradient.numel() != shard_.size)
    throw std::invalid_argument("a gradient slice of " + std::to_string(gradient.numel()) +
                                " values for a shard of " + std::to_string(shard_.size));
  {
    torch::NoGradGuard no_grad;
    flat_->grads().copy_(gradient.reshape({-1}));
  }
  optimizer_->step(lr);
  flat_->adopt_combined_buffers();
}

void shard_engine::restore(const at::Tensor& whole, const std::string& optimizer_state) {
  {
    torch::NoGradGuard no_grad;
    flat_->weights().copy_(whole.reshape({-1}).narrow(0, shard_.begin, shard_.size));
  }
  flat_->load_buffers();
  if (!optimizer_state.empty())
    optimizer_->load(
        optimizer_bytes_part(optimizer_state, shard_.first_parameter, shard_.parameters));
}

}  // namespace troupe
