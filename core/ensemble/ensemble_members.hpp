// Who a stacked ensemble's members are: member k is the job's model started from the weights a
// lone run of seed + k starts from, trained with its own learning rate (and with
// distinct_data_order its own data order). The stacked engine builds its members from these,
// and the tests train member k alone from them to check the stacking changes nothing.
//
// Thread safety: member_initial_weights takes LibTorch's global generator (under its lock).
#pragma once

#include "core/job/job_config.hpp"
#include "core/train/engine_plans.hpp"

#include <ATen/core/Tensor.h>
#include <torch/nn/modules/container/sequential.h>

#include <cstdint>

namespace troupe {

/// Member k trained alone is a replica_engine on member_job(job, k) (its lr, and with
/// distinct_data_order its data order: seed + k; no ensemble) starting from
/// member_initial_weights(settings_of(job), k): the layers' PyTorch initialization under seed
/// job.seed + k (for the built-in models, the weights a job of that seed starts from; a
/// torchscript file gives the architecture, not the weights, so that the members differ).
job_config member_job(const job_config& job, int64_t k);
at::Tensor member_initial_weights(const training_settings& settings, int64_t k, int64_t classes);

/// The layers every member has: the built-in model, or a scripted nn.Sequential's children
/// rebuilt as built-in layers (core/model/script_layers; job_error for one that cannot be
/// stacked). Initialized with LibTorch's global generator.
torch::nn::Sequential member_layers(const model_config& model, int64_t classes);

}  // namespace troupe
