// Kept apart from device_plan.cpp so that the rules stay testable with any inventory.
#include "core/device/device_plan.hpp"

#include <torch/cuda.h>
#include <unistd.h>

namespace troupe {

device_inventory local_inventory() {
  device_inventory inventory;
  const long pages = ::sysconf(_SC_PHYS_PAGES);
  const long page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0)
    inventory.memory_bytes = static_cast<double>(pages) * static_cast<double>(page);
#ifdef TROUPE_WITH_CUDA
  inventory.cuda_built = true;
  inventory.cuda_devices = static_cast<int>(torch::cuda::device_count());
#endif
  return inventory;
}

}  // namespace troupe
