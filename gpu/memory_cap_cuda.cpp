// memory_cap on CUDA builds: the caching allocator's memory fraction of each GPU the run uses.
#include "gpu/memory_cap.hpp"

#include "gpu/cuda_check.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <fmt/format.h>

#include <algorithm>

namespace troupe::gpu {

memory_cap::memory_cap(std::optional<double> mb, const std::vector<device_spec>& devices) {
  if (!mb)
    return;
  for (const auto& d : devices) {
    if (!d.is_cuda() || !d.index)
      continue;
    const int index = static_cast<int>(*d.index);
    if (std::find(capped_.begin(), capped_.end(), index) != capped_.end())
      continue;
    const auto who = "gpu_memory_mb on " + d.str();
    cudaDeviceProp properties{};
    check_cuda(cudaGetDeviceProperties(&properties, index), "cudaGetDeviceProperties", who);
    const double total = static_cast<double>(properties.totalGlobalMem);
    const double cap = *mb * 1024.0 * 1024.0;
    if (cap > total)
      throw gpu_error(fmt::format("{}: a cap of {:.0f} MB is more than the GPU's {:.0f} MB", who,
                                  *mb, total / (1024.0 * 1024.0)));
    // The allocator takes a fraction only once it serves the device: one allocation makes sure.
    // Blocks it keeps cached from earlier runs in this process would be handed out without
    // meeting the cap: they go back to the GPU first.
    (void)at::empty({1}, at::TensorOptions().device(
                             c10::Device(c10::kCUDA, static_cast<c10::DeviceIndex>(index))));
    c10::cuda::CUDACachingAllocator::emptyCache();
    c10::cuda::CUDACachingAllocator::setMemoryFraction(cap / total,
                                                       static_cast<c10::DeviceIndex>(index));
    capped_.push_back(index);
  }
}

memory_cap::~memory_cap() {
  for (const int index : capped_)
    c10::cuda::CUDACachingAllocator::setMemoryFraction(1.0, static_cast<c10::DeviceIndex>(index));
}

}  // namespace troupe::gpu
