// Completes a step when every live worker has reported it: the steps whose workers apply their
// updates themselves (local SGD, a single replica, a ring or NCCL sum) are complete when the
// last report is in. Reports of different steps may interleave (a fast worker runs ahead), but
// each worker reports its steps in order, so steps complete in order: a report of a step that is
// already complete breaks the protocol.
//
// With nodes that may be lost (cluster.on_node_loss "continue"), the live workers change: a
// worker that leaves is no longer waited for (steps every other one reported complete at once),
// and after a regroup the barrier starts again from a step with the new live set.
//
// Thread safety: none; owned by a strategy.
#pragma once

#include "core/policy/step_strategy.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

class report_barrier {
 public:
  /// Steps before `first_step` count as complete (a resumed run starts there).
  explicit report_barrier(int64_t ranks, int64_t first_step = 0);

  struct result {
    std::optional<std::vector<step_part>> complete;  ///< the step's parts, in rank order
    std::string violation;                           ///< a second report, or an unknown rank
  };
  /// Keeps `a`'s part of its step; once all live ranks are in, hands back the step's parts.
  result add(const arrival& a);

  /// A completed step and its parts.
  using closed = std::pair<int64_t, std::vector<step_part>>;
  /// `rank` left: the steps that every remaining live rank had reported complete now, in order.
  std::vector<closed> remove(int64_t rank);
  /// The last step completed (its parts were handed back).
  int64_t completed_through() const { return completed_through_; }
  /// Drops `rank`'s parts of the steps after `after` still open: they complete without them.
  void drop_parts(int64_t rank, int64_t after);
  /// A regroup brought every live worker to the state after `step`: the steps up to it that
  /// were still open complete with the parts that came (a lost worker's are missing), in order.
  std::vector<closed> close_through(int64_t step);
  /// Starts again at `first_step` with `live` (ascending ranks); nothing is open.
  void restart(const std::vector<int64_t>& live, int64_t first_step);

 private:
  bool complete(const std::map<int64_t, step_part>& reported) const;
  std::vector<step_part> parts_of(int64_t step);

  int64_t ranks_;
  std::set<int64_t> live_;
  int64_t completed_through_ = -1;                         ///< the last step completed
  std::map<int64_t, std::map<int64_t, step_part>> steps_;  ///< step -> rank -> part
};

}  // namespace troupe
