// step_graph on CUDA: LibTorch's CUDA graph (at::cuda::CUDAGraph), recorded on the worker's own
// compute stream. CUDA builds only (gpu/CMakeLists.txt).
#pragma once

#include "core/device/step_graph.hpp"

#include <memory>
#include <string>

namespace troupe::gpu {

/// `who` names the worker in error messages ("worker 0").
std::unique_ptr<step_graph> make_cuda_step_graph(std::string who);

}  // namespace troupe::gpu
