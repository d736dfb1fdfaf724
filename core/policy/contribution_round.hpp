// One round of contributions the driver combines: every live worker sends exactly one tensor
// (a gradient, or weights to average) for the round's step; when the last is in, the round
// hands back the contributors' parts in rank order, the order the driver sums them in, so that
// the result does not depend on arrival order. The barrier itself is sync_policy.
//
// Thread safety: none; owned by a strategy.
#pragma once

#include "core/policy/step_strategy.hpp"
#include "core/policy/sync_policy.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

class contribution_round {
 public:
  explicit contribution_round(int64_t ranks);

  struct result {
    std::optional<std::vector<step_part>> complete;  ///< contributors' parts, in rank order
    std::string violation;                           ///< from sync_policy's rules
  };
  /// `a` for the round in progress (the caller has checked its step).
  result add(const arrival& a);

 private:
  sync_policy barrier_;
  std::vector<step_part> parts_;  ///< by rank, for the round in progress
};

}  // namespace troupe
