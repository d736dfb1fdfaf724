// The local_sgd policy as a strategy: replicas step alone on their own rows and average their
// weights (by rows, in rank order) at the schedule's averaging steps: every `period` steps,
// at every evaluation and at the end of the phase. A step is complete when every replica has
// reported it; at an averaging step a replica reports only after the average came back.
// Within a schedule it handles the steps the schedule gives to local_sgd.
//
// A lost worker (cluster.on_node_loss "continue"): its weights leave the average (which is over
// the live replicas, by rows), steps every survivor reported are complete, and the driver lets
// the steps already released complete before it regroups the survivors (nothing in flight is
// lost: each replica steps alone); resume() goes on with the new split of the batch. The rows
// the lost replica trained since its last average never reach the weights: the run's count of
// rows trained is corrected (act::recount).
//
// Thread safety: none; owned by the run driver.
#pragma once

#include "core/policy/contribution_round.hpp"
#include "core/policy/policy_schedule.hpp"
#include "core/policy/report_barrier.hpp"
#include "core/policy/step_strategy.hpp"

#include <optional>
#include <utility>
#include <vector>

namespace troupe {

class local_sgd_strategy : public step_strategy {
 public:
  /// `first_step`: where the run starts (after the checkpoint of a resumed run, else 0).
  local_sgd_strategy(int64_t ranks, const policy_schedule& schedule, const step_rules& rules,
                     int64_t first_step = 0);

  const char* name() const override { return "local_sgd"; }
  step_actions start() override;
  step_actions on_weights(const arrival& a) override;
  step_actions on_report(const arrival& a) override;
  step_actions on_worker_left(int64_t rank) override;
  step_actions close_through(int64_t after_step) override;
  step_actions resume(const std::vector<int64_t>& live, int64_t after_step) override;

 private:
  step_actions average(int64_t step, const std::vector<step_part>& parts);

  int64_t ranks_;
  std::vector<int64_t> live_;  ///< ascending
  policy_schedule schedule_;
  step_rules rules_;
  int64_t first_step_;
  int64_t next_average_;  ///< the step after which the next average is due
  /// Per rank: the last averaging step its weights went into, the (step, rows) it reported
  /// since (which only its next average brings into the weights), and that averaging step's
  /// (step, rows) until its report comes (a worker reports it once the average is back).
  std::vector<int64_t> averaged_through_;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> unaveraged_;
  std::vector<std::optional<std::pair<int64_t, int64_t>>> averaged_unreported_;
  contribution_round round_;
  report_barrier reports_;
};

}  // namespace troupe
