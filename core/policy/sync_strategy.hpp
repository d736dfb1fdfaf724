// The sync policy as a strategy: every step, the mean gradient of all replicas.
//
// Where the gradients meet decides how a step completes:
//   - at the driver: every worker sends its gradient for step s; when the round is complete the
//     driver sums them in rank order (combine) and sends the sum to every worker, and the step
//     is complete (its parts are the gradients' losses and rows);
//   - among the workers (one replica, a ring, NCCL): each applies the sum itself and reports;
//     the step is complete when every worker's report is in.
// Within a schedule it handles the steps the schedule gives to sync and nothing else.
//
// A lost worker (cluster.on_node_loss "continue"): the step in flight needed its gradient, so it
// is abandoned; steps every survivor reported are complete; the driver regroups the survivors
// and resume() goes on with them, each taking its share of the same global batch.
//
// Thread safety: none; owned by the run driver.
#pragma once

#include "core/policy/contribution_round.hpp"
#include "core/policy/policy_schedule.hpp"
#include "core/policy/report_barrier.hpp"
#include "core/policy/step_strategy.hpp"

namespace troupe {

class sync_strategy : public step_strategy {
 public:
  /// `driver_combines`: the gradients meet at the driver (else among the workers).
  /// `first_step`: where the run starts (after the checkpoint of a resumed run, else 0).
  sync_strategy(int64_t ranks, const policy_schedule& schedule, const step_rules& rules,
                bool driver_combines, int64_t first_step = 0);

  const char* name() const override { return "sync"; }
  step_actions start() override;
  step_actions on_gradient(const arrival& a) override;
  step_actions on_report(const arrival& a) override;
  step_actions on_worker_left(int64_t rank) override;
  step_actions close_through(int64_t after_step) override;
  step_actions resume(const std::vector<int64_t>& live, int64_t after_step) override;

 private:
  int64_t ranks_;
  std::vector<int64_t> live_;  ///< ascending
  policy_schedule schedule_;
  step_rules rules_;
  bool driver_combines_;
  int64_t first_step_;
  int64_t next_step_;  ///< the step whose gradients come next (driver meeting)
  contribution_round round_;
  report_barrier reports_;
};

}  // namespace troupe
