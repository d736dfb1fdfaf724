#include "gpu/cuda_check.hpp"

namespace troupe::gpu {

void check_cuda(cudaError_t status, const char* call, const std::string& who) {
  if (status == cudaSuccess)
    return;
  // Clears the sticky "last error" so that the next, unrelated check does not report it again.
  cudaGetLastError();
  throw gpu_error(who + ": " + call + ": " + cudaGetErrorString(status) + " (" +
                  cudaGetErrorName(status) + ")");
}

void check_nccl(ncclResult_t status, const char* call, const std::string& who) {
  if (status == ncclSuccess)
    return;
  std::string message = who + ": " + call + ": " + ncclGetErrorString(status);
  if (const char* detail = ncclGetLastError(nullptr); detail != nullptr && *detail != '\0')
    message += std::string(" (") + detail + ")";
  throw gpu_error(message);
}

int visible_cuda_devices() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

}  // namespace troupe::gpu
