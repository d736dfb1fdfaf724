// How a compute engine gets its input batches onto its device. The engines in core/ know only
// this interface; gpu/worker_device implements it with a copy stream and pinned memory.
#pragma once

#include "core/device/step_graph.hpp"

#include <ATen/core/Tensor.h>
#include <c10/core/Device.h>

#include <memory>

namespace troupe {

class device_transfer {
 public:
  virtual ~device_transfer() = default;
  virtual c10::Device device() const = 0;
  /// A copy of `host` on device(); may return before the copy is done, but every later kernel
  /// of the caller's thread on that device sees the finished copy.
  virtual at::Tensor upload(const at::Tensor& host) = 0;
  /// A graph to record this device's work into (training.cuda_graph), or nullptr where the
  /// device has none (the CPU).
  virtual std::unique_ptr<step_graph> new_step_graph() { return nullptr; }
};

}  // namespace troupe
