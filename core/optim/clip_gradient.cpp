#include "core/optim/clip_gradient.hpp"

#include <ATen/ATen.h>
#include <ATen/core/grad_mode.h>

namespace troupe {

void clip_gradient(const at::Tensor& flat, const training_config& training) {
  at::NoGradGuard no_grad;
  if (training.clip_grad_value) {
    flat.clamp_(-*training.clip_grad_value, *training.clip_grad_value);
    return;
  }
  if (!training.clip_grad_norm)
    return;
  const auto norm = flat.norm(2);
  // clip_grad_norm_ multiplies by the clamped coefficient whatever its value (1 changes nothing).
  flat.mul_((*training.clip_grad_norm / (norm + clip_norm_epsilon)).clamp_max(1.0));
}

void clip_member_gradients(const std::vector<at::Tensor>& gradients,
                           const training_config& training) {
  at::NoGradGuard no_grad;
  if (training.clip_grad_value) {
    for (const auto& g : gradients)
      g.clamp_(-*training.clip_grad_value, *training.clip_grad_value);
    return;
  }
  if (!training.clip_grad_norm || gradients.empty())
    return;
  const auto members = gradients.front().size(0);
  auto squares = at::zeros({members}, gradients.front().options());
  for (const auto& g : gradients)
    squares += g.reshape({members, -1}).pow(2).sum(1);
  const auto coefficient =
      (*training.clip_grad_norm / (squares.sqrt() + clip_norm_epsilon)).clamp_max(1.0);
  for (const auto& g : gradients) {
    std::vector<int64_t> shape(static_cast<std::size_t>(g.dim()), 1);
    shape[0] = members;
    g.mul_(coefficient.view(shape));
  }
}

}  // namespace troupe
