// Kept apart from device_plan.cpp so that the rules stay testable with any inventory.
#include "core/device/device_plan.hpp"

#include <torch/cuda.h>

namespace troupe {

device_inventory local_inventory() {
  device_inventory inventory;
#ifdef TROUPE_WITH_CUDA
  inventory.cuda_built = true;
  inventory.cuda_devices = static_cast<int>(torch::cuda::device_count());
#endif
  return inventory;
}

}  // namespace troupe
