// The run driver's round after a membership change, as a pure state machine: every live worker
// says which step it last applied (and whether it holds the run's state at all: a replacement
// does not); once all have answered, the round decides where the run goes on from, and who
// must first receive the state from whom.
//
// Why workers may disagree: under sync, replicas that sum in a ring finish a step when their
// last chunk arrives, so a node that dies in the middle of the all-gather can leave some
// survivors with step s applied and others without. Every survivor has applied s - 1 (no one
// starts step s before all finished s - 1), so they are at most one step apart. Step s was
// summed over every replica, the lost one included: it counts, once. The ones behind receive
// the state of one that is ahead (the donor) instead of redoing it, and the run goes on from
// s + 1 with the new membership; the step that was in flight after it is redone.
//
// Thread safety: none; owned by the run driver.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace troupe {

/// Where the run goes on from after a regroup.
struct regroup_plan {
  int64_t target = -1;              ///< every live worker holds the state after this step
  int64_t donor = -1;               ///< a worker at `target` that hands its state on
  std::vector<int64_t> recipients;  ///< behind, or without state (replacements), ascending
};

class regroup_round {
 public:
  /// `live`: who must answer; `max_lag`: how many steps apart workers holding state may be (1
  /// under sync; 0 where the round waits until the steps in flight completed).
  regroup_round(int64_t epoch, std::vector<int64_t> live, int64_t max_lag);

  int64_t epoch() const { return epoch_; }

  struct result {
    std::string violation;             ///< the answer breaks the protocol
    std::optional<regroup_plan> plan;  ///< once every live worker has answered
  };
  /// `rank` last applied step `applied` (-1: none yet) and holds the run's state (a
  /// replacement that has not received it yet does not).
  result on_answer(int64_t rank, int64_t applied, bool has_state);
  /// A recipient holds the state after `step` now; true once every recipient does.
  result on_taken(int64_t rank, int64_t step);
  /// Whether the plan is made and every recipient holds the state.
  bool done() const;
  /// The plan, once every answer is in.
  const std::optional<regroup_plan>& plan() const { return plan_; }

 private:
  std::optional<regroup_plan> decide(std::string& violation) const;

  int64_t epoch_;
  std::vector<int64_t> live_;
  int64_t max_lag_;
  struct answer {
    int64_t applied = -1;
    bool has_state = false;
  };
  std::map<int64_t, answer> answers_;
  std::optional<regroup_plan> plan_;
  std::set<int64_t> taken_;
};

}  // namespace troupe
