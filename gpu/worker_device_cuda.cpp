// worker_device on CUDA builds: a compute stream per worker, a copy stream for its batches, and
// NCCL for replicas with a GPU each. Every CUDA and NCCL status goes through cuda_check.
#include "gpu/worker_device.hpp"

#include "gpu/cuda_check.hpp"
#include "gpu/cuda_step_graph.hpp"
#include "gpu/nccl_comm.hpp"

#include <ATen/ATen.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <optional>
#include <utility>
#include <vector>

namespace troupe::gpu {

namespace {

// A ready_mark on CUDA: an event recorded on the sender's stream (no timing: the cheapest kind).
struct cuda_ready_mark final : ready_mark {
  cudaEvent_t event = nullptr;
  ~cuda_ready_mark() override {
    if (event != nullptr)
      cudaEventDestroy(event);  // safe while a stream still waits on it: CUDA frees it after
  }
};

}  // namespace

struct worker_device::impl {
  std::string who;
  c10::Device device{c10::kCPU};
  std::optional<c10::cuda::CUDAStream> compute;  ///< current on the worker's thread
  std::optional<c10::cuda::CUDAStream> copy;     ///< host -> device batches
  std::unique_ptr<nccl_comm> nccl;
  /// begin_op/end_op's timing events, reused step after step; the first `op_marks` are recorded.
  std::vector<cudaEvent_t> op_events;
  std::size_t op_marks = 0;

  ~impl() {
    for (auto event : op_events)
      cudaEventDestroy(event);
  }

  void mark_op() {
    if (!compute)
      return;
    if (op_marks == op_events.size()) {
      cudaEvent_t event = nullptr;
      check_cuda(cudaEventCreate(&event), "cudaEventCreate", who);
      op_events.push_back(event);
    }
    check_cuda(cudaEventRecord(op_events[op_marks], compute->stream()), "cudaEventRecord", who);
    ++op_marks;
  }

  // `waiter` waits (on the GPU, not this thread) for what `source` has queued so far.
  void order_after(cudaStream_t source, cudaStream_t waiter, const char* why) const {
    cudaEvent_t event = nullptr;
    check_cuda(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreate", who);
    const auto recorded = cudaEventRecord(event, source);
    const auto waited = recorded == cudaSuccess ? cudaStreamWaitEvent(waiter, event, 0) : recorded;
    // Destroying a recorded event is safe: CUDA frees it once the wait no longer needs it.
    cudaEventDestroy(event);
    check_cuda(waited, why, who);
  }
};

worker_device::worker_device(const device_spec& device, std::string who)
    : impl_(std::make_unique<impl>()) {
  impl_->who = std::move(who);
  if (!device.is_cuda())
    return;
  if (!device.index)
    throw gpu_error(impl_->who + ": \"cuda\" must be resolved to one GPU before a worker starts");
  const auto index = static_cast<c10::DeviceIndex>(*device.index);
  if (*device.index >= visible_cuda_devices())
    throw gpu_error(impl_->who + ": " + device.str() + " is not visible to this process");
  impl_->device = c10::Device(c10::kCUDA, index);
  check_cuda(cudaSetDevice(*device.index), "cudaSetDevice", impl_->who);
  c10::cuda::set_device(index);
  impl_->compute = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
  impl_->copy = c10::cuda::getStreamFromPool(/*isHighPriority=*/false, index);
  // Current for this thread only: every LibTorch kernel the worker launches goes on it.
  c10::cuda::setCurrentCUDAStream(*impl_->compute);
}

worker_device::~worker_device() = default;

c10::Device worker_device::device() const {
  return impl_->device;
}

at::Tensor worker_device::upload(const at::Tensor& host) {
  if (!impl_->compute)
    return host;
  const auto pinned = host.is_pinned() ? host : host.pin_memory();
  at::Tensor on_device;
  {
    c10::cuda::CUDAStreamGuard on_copy(*impl_->copy);
    on_device = pinned.to(impl_->device, /*non_blocking=*/true);
  }
  impl_->order_after(impl_->copy->stream(), impl_->compute->stream(), "cudaStreamWaitEvent");
  // The tensor was allocated for the copy stream; the caching allocator must not hand its memory
  // out again until the compute stream is done with it too.
  on_device.record_stream(*impl_->compute);
  return on_device;
}

std::unique_ptr<step_graph> worker_device::new_step_graph() {
  if (!impl_->compute)
    return nullptr;
  return make_cuda_step_graph(impl_->who);
}

void worker_device::finish_work() {
  if (impl_->compute)
    check_cuda(cudaStreamSynchronize(impl_->compute->stream()), "cudaStreamSynchronize",
               impl_->who);
}

void worker_device::follow_shared_work(const at::Tensor& shared) {
  if (!impl_->compute)
    return;
  const auto default_stream = c10::cuda::getDefaultCUDAStream(impl_->device.index());
  impl_->order_after(default_stream.stream(), impl_->compute->stream(), "cudaStreamWaitEvent");
  if (shared.is_cuda())
    shared.record_stream(*impl_->compute);
}

ready_mark_ptr worker_device::mark_ready() {
  if (!impl_->compute)
    return nullptr;
  auto mark = std::make_shared<cuda_ready_mark>();
  check_cuda(cudaEventCreateWithFlags(&mark->event, cudaEventDisableTiming), "cudaEventCreate",
             impl_->who);
  check_cuda(cudaEventRecord(mark->event, impl_->compute->stream()), "cudaEventRecord", impl_->who);
  return mark;
}

void worker_device::follow_mark(const ready_mark& mark, const at::Tensor& handed) {
  if (!impl_->compute)
    return;
  const auto* cuda_mark = dynamic_cast<const cuda_ready_mark*>(&mark);
  if (cuda_mark == nullptr)
    throw gpu_error(impl_->who + ": a ready mark that no CUDA worker made");
  check_cuda(cudaStreamWaitEvent(impl_->compute->stream(), cuda_mark->event, 0),
             "cudaStreamWaitEvent", impl_->who);
  if (handed.is_cuda() && handed.device() == impl_->device)
    handed.record_stream(*impl_->compute);
}

void worker_device::begin_op() {
  impl_->mark_op();
}

void worker_device::end_op() {
  impl_->mark_op();
}

std::optional<double> worker_device::take_op_seconds() {
  if (!impl_->compute)
    return std::nullopt;
  const auto marks = std::exchange(impl_->op_marks, 0);
  if (marks % 2 != 0)
    throw gpu_error(impl_->who + ": an operation began and never ended before its time was taken");
  if (marks == 0)
    return 0.0;
  check_cuda(cudaEventSynchronize(impl_->op_events[marks - 1]), "cudaEventSynchronize", impl_->who);
  double seconds = 0;
  for (std::size_t i = 0; i < marks; i += 2) {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, impl_->op_events[i], impl_->op_events[i + 1]),
               "cudaEventElapsedTime", impl_->who);
    seconds += static_cast<double>(ms) * 1e-3;
  }
  return seconds;
}

void worker_device::join_nccl(const std::string& nccl_id, int rank, int ranks) {
  if (!impl_->compute)
    throw gpu_error(impl_->who + ": NCCL needs a CUDA device, this worker runs on the CPU");
  impl_->nccl =
      std::make_unique<nccl_comm>(nccl_id, rank, ranks, impl_->device.index(), impl_->who);
}

void worker_device::all_reduce_sum(const at::Tensor& flat) {
  if (!impl_->nccl)
    throw gpu_error(impl_->who + ": all-reduce before joining the NCCL group");
  TORCH_CHECK(flat.is_cuda() && flat.scalar_type() == at::kFloat && flat.is_contiguous(),
              impl_->who, ": NCCL sums contiguous float32 CUDA tensors");
  impl_->nccl->all_reduce_sum(flat.data_ptr<float>(), static_cast<std::size_t>(flat.numel()),
                              impl_->compute->stream());
}

std::string new_nccl_id() {
  return make_nccl_id("the coordinator");
}

}  // namespace troupe::gpu
