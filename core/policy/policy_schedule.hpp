// Which update policy is in force at each step, and when local SGD replicas average: pure
// functions of the step, so every worker and the run driver agree without exchanging a message
// about it. A plain policy is one phase covering the whole run; a `schedule` job's phases follow
// each other, and the strategies switch at each boundary without restarting any actor.
//
// Thread safety: immutable after construction; shared read-only by all actors of a run.
#pragma once

#include "core/job/job_config.hpp"
#include "core/policy/step_rules.hpp"

#include <cstdint>
#include <vector>

namespace troupe {

class policy_schedule {
 public:
  struct phase {
    int64_t first_step = 0;
    int64_t end_step = 0;  ///< exclusive
    phase_config config;
  };

  /// No phases: a placeholder until the plan assigns the real schedule.
  policy_schedule() = default;
  /// Phases that would start at or after the last step are left out (the plan refuses them).
  policy_schedule(const parallelism_config& parallelism, const step_rules& rules);

  const std::vector<phase>& phases() const { return phases_; }
  const phase& at(int64_t step) const;
  policy_kind policy_at(int64_t step) const { return at(step).config.policy; }

  /// In a local_sgd phase: whether replicas average after `step`: every `period` steps into the
  /// phase, at every evaluation (one model is evaluated, not N drifting ones) and at the end of
  /// the phase (the run, and whatever phase follows, starts from one model). With streaming
  /// fragments, also whenever one fragment's average is due (fragment_after).
  bool averages_after(int64_t step) const;
  /// With streaming fragments (parallelism.fragments F > 1): the fragment averaged after
  /// `step`, alone: fragment f every `period` steps, offset by f * period / F (fragment 0 where
  /// the whole model would be averaged without fragments). -1 where every fragment is averaged
  /// (evaluations, the end of the phase), where none is, and without fragments.
  int64_t fragment_after(int64_t step) const;
  int64_t fragments() const { return fragments_; }
  /// parallelism.fragment_overlap: 0 (a replica waits for each fragment's average), or the
  /// steps it goes on before it merges it.
  int64_t fragment_overlap() const { return overlap_; }
  /// With fragment_overlap, for a step after which a fragment is handed in: the step before
  /// which its average is merged, `overlap` steps on or the next averaging step if that comes
  /// first (so a replica never hands in or evaluates weights that still miss it).
  int64_t merge_before(int64_t step) const;
  /// Whether a fragment's average is in flight after `step`: handed in after it or before it,
  /// merged after it. A checkpoint there would miss it.
  bool fragment_in_flight(int64_t step) const;
  /// Whether that averaging includes SGD's momenta: when the phase asks for it, or when a sync
  /// phase follows (sync needs replicas with identical optimizer states).
  bool averages_momenta_after(int64_t step) const;
  /// The first averaging step at or after `from`, or total_steps if there is none.
  int64_t next_averaging_step(int64_t from) const;
  /// The first step at or after `from` under `policy`, or total_steps if there is none.
  int64_t next_step_under(policy_kind policy, int64_t from) const;
  /// Whether `step` ends a phase before the end of the run (the next step switches policy).
  bool switches_after(int64_t step) const;

 private:
  /// Whether every fragment (the whole model) is averaged after `step`.
  bool averages_whole_after(int64_t step) const;

  std::vector<phase> phases_;
  step_rules rules_;
  int64_t fragments_ = 1;
  int64_t overlap_ = 0;
};

}  // namespace troupe
