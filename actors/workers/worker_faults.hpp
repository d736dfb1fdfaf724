// The test hooks of `faults` (core/job/job_config.hpp), shared by every kind of worker: a
// real LibTorch error (a shape mismatch), so that an injected failure travels the same path as
// any exception inside LibTorch, and a straggler's sleep.
#pragma once

#include "core/job/job_config.hpp"

#include <ATen/ATen.h>

#include <chrono>
#include <thread>

namespace troupe {

/// Throws in `step` on the failing worker; sleeps `slow_ms` on the slowed one.
inline void apply_worker_faults(const faults_config& faults, int64_t worker, int64_t step) {
  if (faults.throw_worker && *faults.throw_worker == worker && faults.throw_step == step)
    at::mm(at::ones({2, 3}), at::ones({4, 5}));
  if (faults.slow_worker && *faults.slow_worker == worker && faults.slow_ms > 0)
    std::this_thread::sleep_for(std::chrono::milliseconds(faults.slow_ms));
}

}  // namespace troupe
