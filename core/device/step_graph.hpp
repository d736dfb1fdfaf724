// A recorded piece of device work, replayed as one launch: what training.cuda_graph uses to run
// a replica's step. The engines in core/ know only this interface; gpu/ implements it with a
// CUDA graph. Shapes and addresses are fixed at capture: a replay reads and writes exactly the
// tensors the captured work did, so the caller refills its inputs in place before each replay.
//
// Thread safety: none; capture and replay on the thread whose stream the work runs on.
#pragma once

#include <functional>

namespace troupe {

class step_graph {
 public:
  virtual ~step_graph() = default;
  /// Records the device work `work` queues on the calling thread's stream, without running it;
  /// the tensors it allocates stay allocated for the replays.
  virtual void capture(const std::function<void()>& work) = 0;
  /// Runs the recorded work once more, queued on the calling thread's stream.
  virtual void replay() = 0;
};

}  // namespace troupe
