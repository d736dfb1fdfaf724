#include "gpu/cuda_step_graph.hpp"

#include "gpu/cuda_check.hpp"

#include <ATen/cuda/CUDAGraph.h>
#include <torch/version.h>

#include <exception>
#include <utility>

namespace troupe::gpu {

namespace {

class cuda_step_graph final : public step_graph {
 public:
  explicit cuda_step_graph(std::string who) : who_(std::move(who)) {}

  void capture(const std::function<void()>& work) override {
    if (captured_)
      throw gpu_error(who_ + ": a CUDA graph is captured once");
#if TORCH_VERSION_MAJOR >= 2
    // Thread-local: the workers beside this one (sharing the GPU, each on its own thread)
    // allocate and synchronize while this one records; only this thread's calls must wait.
    graph_.capture_begin({0, 0}, cudaStreamCaptureModeThreadLocal);
#else
    graph_.capture_begin();
#endif
    try {
      work();
    } catch (const std::exception& e) {
      // The stream must leave capture mode whatever the work threw, or every later kernel on it
      // fails too; what ending it says is secondary to the first error.
      try {
        graph_.capture_end();
      } catch (const std::exception&) {
      }
      throw gpu_error(who_ +
                      ": capturing a training step as a CUDA graph failed (run without "
                      "training.cuda_graph): " +
                      e.what());
    }
    graph_.capture_end();
    captured_ = true;
  }

  void replay() override {
    if (!captured_)
      throw gpu_error(who_ + ": replay of a CUDA graph never captured");
    graph_.replay();
  }

 private:
  std::string who_;
  at::cuda::CUDAGraph graph_;
  bool captured_ = false;
};

}  // namespace

std::unique_ptr<step_graph> make_cuda_step_graph(std::string who) {
  return std::make_unique<cuda_step_graph>(std::move(who));
}

}  // namespace troupe::gpu
