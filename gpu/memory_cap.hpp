// The job key gpu_memory_mb: LibTorch's caching allocator in this process may hold at most that
// many MB on each GPU the run's workers use (its per-process memory fraction, what PyTorch's
// torch.cuda.set_per_process_memory_fraction sets), so that jobs sharing a GPU, a suite's, cannot
// take each other's memory: one that needs more than its cap fails alone with CUDA's
// out-of-memory error, which the run driver reports beside the cap. For the length of one run:
// the cap is lifted when the guard goes.
#pragma once

#include "core/job/device_spec.hpp"

#include <optional>
#include <vector>

namespace troupe::gpu {

class memory_cap {
 public:
  /// No cap (`mb` nullopt) or no GPU among `devices`: nothing is touched. Throws gpu_error
  /// naming the GPU whose memory is less than the cap; gpu_unavailable (worker_device.hpp) on
  /// builds without CUDA.
  memory_cap(std::optional<double> mb, const std::vector<device_spec>& devices);
  ~memory_cap();
  memory_cap(const memory_cap&) = delete;
  memory_cap& operator=(const memory_cap&) = delete;

 private:
  std::vector<int> capped_;  ///< the GPUs whose fraction was set
};

}  // namespace troupe::gpu
