// Creates the LibTorch optimizer a job asks for over a given parameter list. Every replica of a
// synchronous run builds its own from the same config, so replicas that apply the same combined
// gradient stay bit-identical (the DDP arrangement: no optimizer state crosses an actor).
#pragma once

#include "core/config/job_config.hpp"

#include <torch/optim/optimizer.h>

#include <memory>
#include <vector>

namespace troupe {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const optimizer_config& config,
                                                        std::vector<at::Tensor> parameters);

/// Sets every parameter group's learning rate (a schedule's rate for the coming step).
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

}  // namespace troupe
