// Creates the LibTorch optimizer a job asks for over a given parameter list. Every replica of a
// synchronous run builds its own from the same config, so replicas that apply the same combined
// gradient stay bit-identical (the DDP arrangement: no optimizer state crosses an actor).
#pragma once

#include "core/job/job_config.hpp"

#include <torch/optim/optimizer.h>

#include <memory>
#include <vector>

namespace troupe {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const optimizer_config& config,
                                                        std::vector<at::Tensor> parameters);

/// Sets every parameter group's learning rate (a schedule's rate for the coming step).
void set_learning_rate(torch::optim::Optimizer& optimizer, double lr);

/// The optimizer's whole state (momentum buffers, Adam's moments and step counts, the groups'
/// options) as bytes (core/optim/optimizer_bytes); load_optimizer puts it back into an optimizer
/// over parameters of the same shapes in the same order, exactly (checkpoints: a resumed run
/// continues bit for bit). load_optimizer also reads LibTorch's archive format, which older
/// checkpoints hold.
std::string save_optimizer(const torch::optim::Optimizer& optimizer);
/// Throws std::runtime_error when `bytes` is not such a state.
void load_optimizer(torch::optim::Optimizer& optimizer, const std::string& bytes);
/// Why `bytes` are not a well-formed state of either format, or "" (a structural check: the
/// optimizer may still refuse it).
std::string optimizer_state_problem(const std::string& bytes);

}  // namespace troupe
