// One member's handle on an NCCL communicator, with raw device pointers and streams (no
// LibTorch): what worker_device's NCCL group and the NCCL benchmark share.
//
// Setting up: one member calls make_nccl_id() and the id travels to the others in a CAF message
// (a std::string of NCCL_UNIQUE_ID_BYTES bytes); every member then constructs an nccl_comm with
// it. The constructor blocks until all `ranks` members have joined, so each must run on a
// thread of its own (detached actors do). NCCL refuses two ranks on one GPU.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstddef>
#include <string>

namespace troupe::gpu {

/// A fresh NCCL unique id, as bytes that can travel in a message.
std::string make_nccl_id(const std::string& who);

class nccl_comm {
 public:
  /// Throws gpu_error when `id` is not an NCCL id (wrong size), rank is not in [0, ranks), or
  /// NCCL fails; `who` names the member in every message.
  nccl_comm(const std::string& id, int rank, int ranks, int device, std::string who);
  ~nccl_comm();
  nccl_comm(const nccl_comm&) = delete;
  nccl_comm& operator=(const nccl_comm&) = delete;

  /// Sums `count` floats at `data` over all members, in place, queued on `stream`.
  void all_reduce_sum(float* data, std::size_t count, cudaStream_t stream);

  int rank() const { return rank_; }
  int ranks() const { return ranks_; }

 private:
  ncclComm_t comm_ = nullptr;
  int rank_;
  int ranks_;
  std::string who_;
};

}  // namespace troupe::gpu
