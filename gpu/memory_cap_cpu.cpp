// memory_cap on builds without CUDA: a CPU run has nothing to cap; a GPU cannot be had.
#include "gpu/memory_cap.hpp"

#include "gpu/worker_device.hpp"

namespace troupe::gpu {

memory_cap::memory_cap(std::optional<double> mb, const std::vector<device_spec>& devices) {
  for (const auto& d : devices)
    if (mb && d.is_cuda())
      throw gpu_unavailable("gpu_memory_mb: " + d.str() +
                            " needs CUDA, and this build of troupe has none (docs/gpus.md)");
}

memory_cap::~memory_cap() = default;

}  // namespace troupe::gpu
