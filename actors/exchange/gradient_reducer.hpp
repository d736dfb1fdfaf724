// Where a replica's gradient meets the other replicas' under sync: one interface for every way
// the plan can choose (run_plan::gradients), as gloo's algorithms and c10d's backends are one.
// A worker starts a sum and learns once how it went; which transport carries it is decided
// once per membership epoch, when the worker makes its reducer (actors/workers/replica_reducers)
// from the plan's gradient_meeting:
//
//   local   one replica: there is nothing to combine
//   nccl    the replicas sum on their GPUs' streams
//   shared  the replicas of this process sum slices in shared memory (replica_reduction)
//   host    the nodes of one host sum through shared memory (host_reduction)
//   socket  the socket ring between processes, on a thread of its own (ring_runner)
//   actors  the ring all-reduce over actor messages (ring_exchange)
//   driver  the gradient goes to the run driver, which sums in rank order and sends it back
//
// Thread safety: a reducer belongs to its worker's actor: start() runs in its handlers.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>

namespace troupe {

enum class reduce_outcome {
  summed,   ///< the gradient holds the sum over the live replicas now
  pending,  ///< the sum arrives as a message the worker handles (a ring chunk, the socket ring's
            ///< end, the driver's update), and is applied then
  aborted,  ///< the run is ending (another replica failed): the driver names the cause
};

class gradient_reducer {
 public:
  virtual ~gradient_reducer() = default;
  /// Starts summing `gradient` (the worker's flat gradient, summed in place where the transport
  /// sums in place) for `step`.
  virtual reduce_outcome start(int64_t step, const at::Tensor& gradient) = 0;
  /// What the worker's probe reports of a sum under way: chunks received, or -1 when none is.
  virtual int64_t received() const { return -1; }
};

}  // namespace troupe
