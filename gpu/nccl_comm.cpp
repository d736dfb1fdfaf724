#include "gpu/nccl_comm.hpp"

#include "gpu/cuda_check.hpp"

#include <cstring>

namespace troupe::gpu {

std::string make_nccl_id(const std::string& who) {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", who);
  return std::string(id.internal, sizeof id.internal);
}

nccl_comm::nccl_comm(const std::string& id, int rank, int ranks, int device, std::string who)
    : rank_(rank), ranks_(ranks), who_(std::move(who)) {
  ncclUniqueId unique;
  if (id.size() != sizeof unique.internal)
    throw gpu_error(who_ + ": an NCCL id has " + std::to_string(sizeof unique.internal) +
                    " bytes, got " + std::to_string(id.size()));
  if (ranks < 1 || rank < 0 || rank >= ranks)
    throw gpu_error(who_ + ": NCCL rank " + std::to_string(rank) + " of " + std::to_string(ranks) +
                    " is out of range");
  std::memcpy(unique.internal, id.data(), id.size());
  check_cuda(cudaSetDevice(device), "cudaSetDevice", who_);
  check_nccl(ncclCommInitRank(&comm_, ranks, unique, rank), "ncclCommInitRank", who_);
}

nccl_comm::~nccl_comm() {
  // Destroy waits for the communicator's queued work; a failure here has nobody to tell.
  if (comm_ != nullptr)
    ncclCommDestroy(comm_);
}

void nccl_comm::all_reduce_sum(float* data, std::size_t count, cudaStream_t stream) {
  check_nccl(ncclAllReduce(data, data, count, ncclFloat, ncclSum, comm_, stream), "ncclAllReduce",
             who_);
}

}  // namespace troupe::gpu
