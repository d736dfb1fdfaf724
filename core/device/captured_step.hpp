// training.cuda_graph's bookkeeping for an engine's step (a replica's gradient, a stacked
// ensemble's gradients): the first `warmup_steps` run eagerly, the next is recorded once as a
// step_graph on inputs of its own, and from then on each step's inputs are copied into those and
// the recording replayed. A step whose inputs have other shapes, or another `variant` (a
// replica's share of the global batch, which the recording holds as a constant), runs eagerly
// and leaves the recording as it is.
//
// Thread safety: none; the thread whose stream the work runs on drives it.
#pragma once

#include "core/device/device_transfer.hpp"
#include "core/device/step_graph.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

namespace troupe {

class captured_step {
 public:
  /// Device work on `inputs` that returns the tensors the caller reads afterwards (a loss). It
  /// must queue work only, never read a value on the host: a recording holds no host code.
  using work = std::function<std::vector<at::Tensor>(const std::vector<at::Tensor>& inputs)>;

  /// Eager steps before one is recorded: LibTorch initializes lazily (cuBLAS's handle and
  /// workspace, autograd's device threads, a TorchScript model's profiled runs), and none of
  /// that may happen inside a capture.
  static constexpr int64_t warmup_steps = 3;

  /// `transfer` makes the recording (device_transfer::new_step_graph); not owned, it outlives
  /// this.
  explicit captured_step(device_transfer& transfer);
  ~captured_step();

  /// One step: `step_work(inputs)` run now, or its recording replayed on a copy of `inputs`.
  /// The tensors returned by a replay are the recording's own, rewritten by the next replay.
  std::vector<at::Tensor> run(const std::vector<at::Tensor>& inputs, double variant,
                              const work& step_work);

  /// Forgets the recording (it wrote into tensors the engine has since replaced); the next step
  /// that is not a warm-up records anew.
  void forget();

  /// Steps whose outputs came from a replay so far.
  int64_t replayed_steps() const { return replayed_steps_; }

 private:
  struct recording;

  bool fits(const std::vector<at::Tensor>& inputs, double variant) const;

  device_transfer& transfer_;
  std::unique_ptr<recording> recorded_;
  int64_t eager_steps_ = 0;
  int64_t replayed_steps_ = 0;
};

/// A captured_step on `transfer`'s device, or nullptr where there is none or it records no
/// graphs (the CPU): what an engine holds under training.cuda_graph.
std::unique_ptr<captured_step> make_captured_step(device_transfer* transfer);

}  // namespace troupe
