// Completes a step when every live worker has reported it: the steps whose workers apply their
// updates themselves (local SGD, a single replica, a ring or NCCL sum) are complete when the
// last report is in. Reports of different steps may interleave (a fast worker runs ahead), but
// each worker reports its steps in order, so steps complete in order: a report of a step that is
// already complete breaks the protocol.
//
// Thread safety: none; owned by a strategy.
#pragma once

#include "core/policy/step_strategy.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
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
  /// Keeps `a`'s part of its step; once all `ranks` are in, hands back the step's parts.
  result add(const arrival& a);

 private:
  int64_t ranks_;
  int64_t completed_through_ = -1;                         ///< the last step completed
  std::map<int64_t, std::map<int64_t, step_part>> steps_;  ///< step -> rank -> part
};

}  // namespace troupe
