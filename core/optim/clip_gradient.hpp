// Gradient clipping, as PyTorch's torch.nn.utils.clip_grad_norm_ and clip_grad_value_ do it,
// on troupe's gradients: a replica's flat buffer (after the replicas' gradients met, so every
// replica clips the same sum identically), or a stacked ensemble's per-member slices.
#pragma once

#include "core/job/job_config.hpp"

#include <ATen/core/Tensor.h>

#include <vector>

namespace troupe {

/// PyTorch's clip_grad_norm_ keeps this in the denominator: max_norm / (norm + 1e-6).
inline constexpr double clip_norm_epsilon = 1e-6;

/// Clips `flat` in place as `training` says (nothing when it sets no clipping): scaled by
/// min(1, clip_grad_norm / (||flat||_2 + 1e-6)), or clamped to [-clip_grad_value, value].
void clip_gradient(const at::Tensor& flat, const training_config& training);

/// The same for the gradients of a stacked ensemble's parameters, each [members, ...]: every
/// member's slices are clipped by that member's own norm, as if it trained alone.
void clip_member_gradients(const std::vector<at::Tensor>& gradients,
                           const training_config& training);

}  // namespace troupe
