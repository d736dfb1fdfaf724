#include "core/policy/step_blame.hpp"

#include <algorithm>

namespace troupe {

step_blame blame_for(const step_stall& stall, const std::vector<int64_t>& live,
                     const std::map<int64_t, probe_answer>& probes, bool ring,
                     const std::set<int64_t>& sent) {
  step_blame b;
  if (live.empty())
    return b;
  std::vector<int64_t> behind;
  for (auto r : stall.behind)
    if (std::binary_search(live.begin(), live.end(), r))
      behind.push_back(r);
  if (!behind.empty() && behind.size() < live.size()) {
    b.what = step_blame::kind::behind;
    b.rank = behind.front();
    b.step = stall.behind_step;
    return b;
  }
  for (auto r : live)
    if (probes.count(r) == 0) {
      b.what = step_blame::kind::silent;
      b.rank = r;
      return b;
    }
  if (ring && live.size() > 1) {
    int64_t fewest = -1;
    std::size_t at = 0;
    for (std::size_t i = 0; i < live.size(); ++i) {
      const auto& p = probes.at(live[i]);
      if (!p.in_ring)
        continue;
      if (fewest < 0 || p.received < fewest) {
        fewest = p.received;
        at = i;
      }
    }
    if (fewest >= 0) {
      b.what = step_blame::kind::ring_link;
      b.link_to = live[at];
      b.rank = live[(at + live.size() - 1) % live.size()];
      b.step = probes.at(live[at]).step;
      return b;
    }
  }
  for (auto r : live)
    if (sent.count(r) == 0) {
      b.what = step_blame::kind::missing;
      b.rank = r;
      return b;
    }
  return b;
}

}  // namespace troupe
