// Kept apart from device_plan.cpp so that the rules stay testable with any inventory.
#include "core/device/device_plan.hpp"
#include "core/io/physical_memory.hpp"

#include <sys/resource.h>
#include <torch/cuda.h>

namespace troupe {

device_inventory local_inventory() {
  device_inventory inventory;
  inventory.memory_bytes = physical_memory_bytes();
  struct rlimit limit {};
  if (::getrlimit(RLIMIT_AS, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY)
    inventory.address_space_bytes = static_cast<double>(limit.rlim_cur);
#ifdef TROUPE_WITH_CUDA
  inventory.cuda_built = true;
  inventory.cuda_devices = static_cast<int>(torch::cuda::device_count());
#endif
  return inventory;
}

}  // namespace troupe
