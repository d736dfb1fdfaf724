// Who holds a step up, once the step watchdog (step_watch.hpp) finds none completed in time:
// one worker (the run then names its node, and under cluster.on_node_loss "continue" goes on
// without it), or one ring link (its sending end is handled the same way). Pure: the driver
// feeds it the stall and what each live worker said when probed.
//
//   1. workers that reported an older step than the rest are behind: the lowest such rank;
//   2. when all stand together, a live worker that did not answer the probe (a process that is
//      stopped, or stuck in a computation) holds the others up;
//   3. when all answered and wait inside a ring all-reduce, the one that received the fewest
//      chunks of it waits on its predecessor: that link holds the ring up (a link that passes
//      heartbeats but no bucket, as behind a path-MTU black hole). Equal counts: the lowest rank;
//   4. otherwise the first live worker that sent nothing for the step (gradients meeting at the
//      driver).
//
// Thread safety: none.
#pragma once

#include "core/policy/step_watch.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace troupe {

/// What a live worker said when probed (messages/membership.hpp worker_probe).
struct probe_answer {
  int64_t step = 0;
  bool busy = false;
  bool in_ring = false;
  int64_t received = 0;
};

struct step_blame {
  enum class kind { behind, silent, ring_link, missing, none };
  kind what = kind::none;
  /// The worker whose node is blamed: the one behind or silent, or the link's sending end.
  int64_t rank = -1;
  int64_t link_to = -1;  ///< ring_link: the receiving end
  int64_t step = -1;     ///< behind: its last reported step; ring_link: the step summed
};

/// `live`: ascending ranks (the ring's order); `sent`: ranks whose gradient for the step the
/// driver holds (gradients meeting at the driver).
step_blame blame_for(const step_stall& stall, const std::vector<int64_t>& live,
                     const std::map<int64_t, probe_answer>& probes, bool ring,
                     const std::set<int64_t>& sent = {});

}  // namespace troupe
