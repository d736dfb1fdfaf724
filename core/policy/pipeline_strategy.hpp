// The pipeline flush as a strategy: replicas x stages stage workers, driven step by step.
//
// For each step s (worker w is stage w % stages of pipeline w / stages):
//   a. every stage is told to compute s; each runs its schedule's operations and sends its
//      stage gradient (the last stage's carries the pipeline's loss and rows);
//   b. per stage, a round over the pipelines: when that stage's gradients from every pipeline
//      are in, the driver sums them in pipeline order and sends the sum to that stage of every
//      pipeline (combine);
//   c. when every stage has applied and reported, the step is complete;
//   d. when an evaluation is due, the first stage of every pipeline starts pushing the test
//      set through, and the next step waits for the evaluation to complete.
//
// Thread safety: none; owned by the run driver.
#pragma once

#include "core/policy/contribution_round.hpp"
#include "core/policy/report_barrier.hpp"
#include "core/policy/step_strategy.hpp"

#include <vector>

namespace troupe {

class pipeline_strategy : public step_strategy {
 public:
  /// `first_step`: where the run starts (after the checkpoint of a resumed run, else 0).
  pipeline_strategy(int64_t pipelines, int64_t stages, const step_rules& rules,
                    int64_t first_step = 0);

  const char* name() const override { return "pipeline (sync)"; }
  step_actions start() override;
  step_actions on_gradient(const arrival& a) override;
  step_actions on_report(const arrival& a) override;
  step_actions on_evaluated(int64_t step) override;

 private:
  /// Worker ids of `stage` in pipelines `pipelines`, in that order.
  std::vector<int64_t> stage_workers(int64_t stage, const std::vector<int64_t>& pipelines) const;
  step_actions next_step();

  int64_t pipelines_;
  int64_t stages_;
  step_rules rules_;
  int64_t step_;                            ///< the step in progress
  std::vector<contribution_round> rounds_;  ///< by stage: the pipelines' gradients of the step
  std::vector<step_part> losses_;           ///< by pipeline, from its last stage
  report_barrier reports_;
  bool evaluating_ = false;  ///< the evaluation after step_ is in progress
};

}  // namespace troupe
