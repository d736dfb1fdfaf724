// The one place where CUDA and NCCL status codes become exceptions. Every call into either
// library goes through check_cuda / check_nccl with the name of the call and of the actor that
// made it, so that a failure reads "worker 2: ncclCommInitRank: unhandled system error", not a
// bare number, and is reported by the actor's exception handler like any other error.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <stdexcept>
#include <string>

namespace troupe::gpu {

class gpu_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Throws gpu_error "<who>: <call>: <CUDA's description>" unless `status` is cudaSuccess.
void check_cuda(cudaError_t status, const char* call, const std::string& who);
/// Throws gpu_error "<who>: <call>: <NCCL's description> (<last NCCL error>)" unless ncclSuccess.
void check_nccl(ncclResult_t status, const char* call, const std::string& who);

/// GPUs visible to this process; 0 when there is no driver or no device (never throws).
int visible_cuda_devices();

}  // namespace troupe::gpu
