#include "core/train/autocast_scope.hpp"

#include <ATen/autocast_mode.h>
#include <torch/version.h>

namespace troupe {
namespace {

// LibTorch 2.4 replaced the per-device calls with ones that take the device (GPU builds use a
// 2.x LibTorch; Debian's is 1.13).
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
bool enabled(c10::DeviceType d) {
  return at::autocast::is_autocast_enabled(d);
}
void set_enabled(c10::DeviceType d, bool on) {
  at::autocast::set_autocast_enabled(d, on);
}
c10::ScalarType dtype(c10::DeviceType d) {
  return at::autocast::get_autocast_dtype(d);
}
void set_dtype(c10::DeviceType d, c10::ScalarType t) {
  at::autocast::set_autocast_dtype(d, t);
}
#else
bool enabled(c10::DeviceType d) {
  return d == c10::DeviceType::CPU ? at::autocast::is_cpu_enabled() : at::autocast::is_enabled();
}
void set_enabled(c10::DeviceType d, bool on) {
  if (d == c10::DeviceType::CPU)
    at::autocast::set_cpu_enabled(on);
  else
    at::autocast::set_enabled(on);
}
c10::ScalarType dtype(c10::DeviceType d) {
  return d == c10::DeviceType::CPU ? at::autocast::get_autocast_cpu_dtype()
                                   : at::autocast::get_autocast_gpu_dtype();
}
void set_dtype(c10::DeviceType d, c10::ScalarType t) {
  if (d == c10::DeviceType::CPU)
    at::autocast::set_autocast_cpu_dtype(t);
  else
    at::autocast::set_autocast_gpu_dtype(t);
}
#endif

}  // namespace

// float16 autocast is CUDA's (LibTorch's CPU kernels have no float16 matrix products): the plan
// refuses fp16 elsewhere, and on a CPU (the engine's tests) the forward stays float32 while the
// loss scaling around it runs as it does on a GPU.
autocast_scope::autocast_scope(precision_kind precision, c10::DeviceType device)
    : on_(precision == precision_kind::bf16 ||
          (precision == precision_kind::fp16 && device == c10::DeviceType::CUDA)),
      device_(device) {
  if (!on_)
    return;
  was_enabled_ = enabled(device_);
  was_dtype_ = dtype(device_);
  set_enabled(device_, true);
  set_dtype(device_,
            precision == precision_kind::fp16 ? c10::ScalarType::Half : c10::ScalarType::BFloat16);
  at::autocast::increment_nesting();
}

autocast_scope::~autocast_scope() {
  if (!on_)
    return;
  // As torch.autocast's exit: the weights' lower-precision copies live until the outermost
  // scope ends (they are stale after the next optimizer step).
  if (at::autocast::decrement_nesting() == 0)
    at::autocast::clear_cache();
  set_enabled(device_, was_enabled_);
  set_dtype(device_, was_dtype_);
}

}  // namespace troupe
