// One round of contributions the driver combines: every live worker sends exactly one tensor
// (a gradient, or weights to average) for the round's step; when the last is in, the round
// hands back the contributors' parts in slot order, the order the driver sums them in, so that
// the result does not depend on arrival order. The barrier itself is sync_policy.
//
// A slot is a replica: the rank itself, or in a pipeline the pipeline index of a stage's
// worker. Messages name the arrival's own worker and step.
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
  /// `what` names a contribution in messages ("gradient", "weights").
  contribution_round(int64_t slots, std::string what);

  struct result {
    std::optional<std::vector<step_part>> complete;  ///< contributors' parts, in slot order
    std::string violation;                           ///< naming the worker and the step
  };
  /// `a` in `slot` for the round in progress (the caller has checked its step).
  result add(int64_t slot, const arrival& a);
  /// `slot` left: what it sent is dropped, and the round completes when every other live slot
  /// is in (the contributors' parts then, in slot order).
  result remove(int64_t slot);
  /// Starts an empty round with only `live` (ascending slots) taking part.
  void restart(const std::vector<int64_t>& live);

 private:
  result complete_with(const policy_decision& d);

  sync_policy barrier_;
  std::string what_;
  std::vector<step_part> parts_;  ///< by slot, for the round in progress
};

}  // namespace troupe
