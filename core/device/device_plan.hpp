// Which GPU each worker of a job gets, decided before the run starts: a job that asks for CUDA on
// a build or a machine without it fails here, at plan time, with a message that says which.
#pragma once

#include "core/job/device_spec.hpp"
#include "core/job/job_config.hpp"

#include <string>
#include <vector>

namespace troupe {

/// What this process can compute on.
struct device_inventory {
  /// Built against a CUDA LibTorch, with NCCL (CMake option TROUPE_CUDA).
  bool cuda_built = false;
  int cuda_devices = 0;     ///< GPUs visible to this process
  double memory_bytes = 0;  ///< physical memory of the machine; 0 when unknown (no check)
  /// What this process may map (RLIMIT_AS, `ulimit -v`); 0 when unlimited (no check).
  double address_space_bytes = 0;
};

/// This process's inventory: the build, and the GPUs LibTorch sees (CUDA_VISIBLE_DEVICES applies).
device_inventory local_inventory();

struct device_plan {
  std::vector<device_spec> workers;  ///< one concrete device per worker, replica-major
  /// Two or more workers, each on a GPU of its own: NCCL can sum among them (it refuses two
  /// ranks on one device). The run plan decides from this where gradients meet.
  bool gpu_each = false;
};

/// Resolves `job.device` (parse_job has checked its shape) against `inventory`: "cuda" becomes
/// cuda:(w mod visible GPUs). Throws job_error naming /device when the build has no CUDA, no GPU
/// is visible, an index is out of range, or replicas share some GPUs but not all.
device_plan make_device_plan(const job_config& job, const device_inventory& inventory);

/// "cpu", "cuda:0 (all 4 workers)" or "cuda:0 cuda:1 ...".
std::string render_device_plan(const device_plan& plan);

}  // namespace troupe
