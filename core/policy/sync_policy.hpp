// The synchronous update policy as a pure state machine: no threads, no actors, no tensors.
// It is fed gradient arrivals and departures and answers whether the current step is complete,
// and with which contributors (always in ascending worker order, so that the driver sums
// gradients in the same order whatever order they arrived in).
//
// Rules: every live worker contributes exactly one gradient to each step, for that step only.
// A gradient from an unknown or departed worker, for another step, or a second one for the
// same step is rejected (a protocol error the driver reports). A departing worker no
// longer blocks the step: if all remaining live workers had already arrived, the step completes.
//
// Thread safety: none; owned by a strategy (contribution_round).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

enum class verdict {
  wait,      ///< step not complete yet: nothing to do
  complete,  ///< combine `contributors`' gradients for `step`, release every live worker
  rejected,  ///< the event breaks the protocol; `reason` says how. State is unchanged.
};

struct policy_decision {
  verdict kind = verdict::wait;
  int64_t step = 0;
  std::vector<std::size_t> contributors;  ///< ascending worker ids (for `complete`)
  std::string reason;                     ///< for `rejected`
};

class sync_policy {
 public:
  explicit sync_policy(std::size_t workers, int64_t first_step = 0);

  policy_decision on_gradient(std::size_t worker, int64_t step);
  policy_decision on_worker_left(std::size_t worker);

  int64_t step() const { return step_; }
  std::size_t live_workers() const;
  bool is_live(std::size_t worker) const;
  bool has_arrived(std::size_t worker) const;

 private:
  policy_decision complete_step();
  bool all_live_arrived() const;

  enum class slot { waiting, arrived, gone };
  std::vector<slot> slots_;
  int64_t step_;
};

}  // namespace troupe
