// A worker's hold on the device it computes on, the same interface on every build.
//
// CPU: nothing to do; every call is free. CUDA (builds with TROUPE_CUDA): the worker gets a
// compute stream of its own, made current on the worker's thread, so that several workers can
// share one GPU without serializing on its default stream; input batches go host -> device from
// pinned memory on a second stream, so that the next batch's copy overlaps this batch's compute.
// A CPU build throws gpu_unavailable for a CUDA device; plan time (core/device) refuses such jobs
// first, so this is a last line.
//
// Thread safety: construct and use on the worker's own thread (streams are per thread).
#pragma once

#include "core/device/device_transfer.hpp"
#include "core/device/ready_mark.hpp"
#include "core/job/device_spec.hpp"

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>

namespace troupe::gpu {

class gpu_unavailable : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class worker_device final : public device_transfer {
 public:
  /// `who` names the worker in error messages ("worker 2").
  worker_device(const device_spec& device, std::string who);
  ~worker_device() override;

  c10::Device device() const override;
  at::Tensor upload(const at::Tensor& host) override;
  /// CUDA: a graph recorded on the worker's compute stream; CPU: nullptr.
  std::unique_ptr<step_graph> new_step_graph() override;

  /// Blocks until the worker's stream has run everything queued on it: before a tensor the
  /// stream writes leaves the actor.
  void finish_work();
  /// Makes the worker's next work wait for what other threads have queued on the device's
  /// default stream (the coordinator sums gradients there) without blocking this thread, and
  /// keeps `shared` (their result) from being reallocated before the worker's stream is done
  /// reading it.
  void follow_shared_work(const at::Tensor& shared);
  /// A mark after the work queued so far on the worker's stream, for a tensor it hands to
  /// another worker on the same process (core/device/ready_mark); nullptr on the CPU.
  ready_mark_ptr mark_ready();
  /// Makes the worker's next work wait, on the device, for another worker's `mark`, and keeps
  /// `handed` (the tensor that mark covers, on this device) from being reallocated before this
  /// worker's stream is done reading it.
  void follow_mark(const ready_mark& mark, const at::Tensor& handed);

  /// Device time of operations, for a pipeline stage's busy time: begin_op() and end_op() around
  /// the work of one operation mark the compute stream (CUDA events); take_op_seconds() waits for
  /// the last mark, then sums the time between each pair marked since the last take. The host's
  /// clock cannot see it: an operation's kernels run after the call that queued them returns.
  /// CPU: the marks do nothing and take_op_seconds() is empty (the caller times on the host).
  void begin_op();
  void end_op();
  std::optional<double> take_op_seconds();

  /// Sync replicas with a GPU each: joins the NCCL group (blocks until all `ranks` have joined).
  void join_nccl(const std::string& nccl_id, int rank, int ranks);
  /// Sums `flat` (float32, on this device) in place over the NCCL group, on the worker's stream.
  void all_reduce_sum(const at::Tensor& flat);

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

/// A new NCCL unique id, as bytes for a message; throws gpu_unavailable on CPU builds.
std::string new_nccl_id();

}  // namespace troupe::gpu
