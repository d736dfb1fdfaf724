// worker_device on builds without CUDA: a CPU device needs nothing, a CUDA one cannot be had.
#include "gpu/worker_device.hpp"

namespace troupe::gpu {

namespace {

[[noreturn]] void unavailable(const std::string& who, const std::string& what) {
  throw gpu_unavailable(who + ": " + what +
                        " needs CUDA, and this build of troupe has none (docs/gpus.md)");
}

}  // namespace

struct worker_device::impl {};

worker_device::worker_device(const device_spec& device, std::string who) {
  if (device.is_cuda())
    unavailable(who, device.str());
}

worker_device::~worker_device() = default;

c10::Device worker_device::device() const {
  return c10::Device(c10::kCPU);
}

at::Tensor worker_device::upload(const at::Tensor& host) {
  return host;
}

std::unique_ptr<step_graph> worker_device::new_step_graph() {
  return nullptr;
}

void worker_device::finish_work() {}
void worker_device::follow_shared_work(const at::Tensor&) {}
ready_mark_ptr worker_device::mark_ready() {
  return nullptr;
}
void worker_device::follow_mark(const ready_mark&, const at::Tensor&) {}

void worker_device::begin_op() {}
void worker_device::end_op() {}
std::optional<double> worker_device::take_op_seconds() {
  return std::nullopt;
}

void worker_device::join_nccl(const std::string&, int rank, int) {
  unavailable("worker " + std::to_string(rank), "NCCL");
}

void worker_device::all_reduce_sum(const at::Tensor&) {
  unavailable("a worker", "NCCL");
}

std::string new_nccl_id() {
  unavailable("the coordinator", "NCCL");
}

}  // namespace troupe::gpu
