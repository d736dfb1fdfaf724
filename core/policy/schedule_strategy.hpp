// The schedule policy as a strategy: phases of sync and local_sgd, switched at step boundaries
// without restarting any actor. Each event goes to the strategy of the phase its step is in;
// both see the same schedule, so a step's completion names the policy that follows it.
//
// Thread safety: none; owned by the run driver.
#pragma once

#include "core/policy/local_sgd_strategy.hpp"
#include "core/policy/sync_strategy.hpp"

namespace troupe {

class schedule_strategy : public step_strategy {
 public:
  /// `first_step`: where the run starts (after the checkpoint of a resumed run, else 0).
  schedule_strategy(int64_t ranks, const policy_schedule& schedule, const step_rules& rules,
                    bool driver_combines, int64_t first_step = 0);

  const char* name() const override { return "schedule"; }
  step_actions start() override;
  step_actions on_gradient(const arrival& a) override;
  step_actions on_weights(const arrival& a) override;
  step_actions on_report(const arrival& a) override;

 private:
  step_strategy& phase_of(int64_t step);

  int64_t ranks_;
  int64_t first_step_;
  policy_schedule schedule_;
  sync_strategy sync_;
  local_sgd_strategy local_sgd_;
};

}  // namespace troupe
