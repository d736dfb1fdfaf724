// The learning rate of each optimizer step as a pure function of the step, so every replica,
// the parameter server and a resumed run agree on it without a message. The rates equal
// PyTorch's lr_scheduler for the same settings (tests/python/check_lr_schedules.py compares
// them): StepLR, CosineAnnealingLR, OneCycleLR (cosine annealing, momentum not cycled), and a
// LinearLR warm-up chained before the first two by SequentialLR.
#pragma once

#include "core/job/job_config.hpp"

#include <cstdint>

namespace troupe {

/// The rate of optimizer step `step` (0-based) of a run of `total_steps`, for base rate
/// `optimizer.lr` (one_cycle: its peak).
double learning_rate(const optimizer_config& optimizer, int64_t step, int64_t total_steps);

/// learning_rate / optimizer.lr: what a per-member or staleness-scaled rate is multiplied by.
double learning_rate_factor(const optimizer_config& optimizer, int64_t step, int64_t total_steps);

/// "constant", "cosine to 0.0001 after 100 warm-up steps from x0.1", ... for the plan.
std::string describe_schedule(const optimizer_config& optimizer, int64_t total_steps);

}  // namespace troupe
