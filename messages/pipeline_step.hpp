// The step protocol of pipelines: stage workers exchange activations and their gradients
// directly, and report to the pipeline coordinator, which drives the steps.
//
// once, before the first step:
//   coordinator -> stage   (link_atom, previous stage, next stage)   (either may be invalid)
// every step s:
//   coordinator -> stage   (compute_atom, s)        run the schedule's operations for step s
//   stage -> next stage    (forward_atom, {s, m}, activation)
//   stage -> prev stage    (backward_atom, {s, m}, gradient of the activation)
//   stage -> coordinator   (gradient_atom, gradient_meta, stage gradient)   after the flush
//   coordinator -> stage   (update_atom, update_meta, summed over the stage's replicas)
//   stage -> coordinator   stage_stats
// when evaluating after step s (after every stage has applied it):
//   coordinator -> stage 0 (evaluate_atom, s); chunks flow on as (forward_atom, {s, c, eval})
//   last stage -> coordinator   eval_report
// after the last step: stage -> coordinator (weights_atom, worker, stage weights).
// A message for a step a stage has not been told to run yet is kept until it is: activations
// of step s+1 may overtake the coordinator's (compute_atom, s+1).
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>

namespace troupe {

struct micro_meta {
  int64_t step = 0;
  int64_t micro = 0;  ///< the micro-batch, or the test chunk when evaluating
  bool eval = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, micro_meta& x) {
  return f(caf::meta::type_name("micro_meta"), x.step, x.micro, x.eval);
}

/// A stage's figures for one step. Clock readings are steady_clock nanoseconds, comparable only
/// within one process: the coordinator derives each pipeline's flush window from them.
struct stage_stats {
  int64_t worker = 0;
  int64_t step = 0;
  double busy_s = 0;        ///< running forward and backward operations
  int64_t first_op_ns = 0;  ///< when the step's work began (the compute message arrived)
  int64_t last_op_ns = 0;   ///< when its last operation ended
  int64_t peak_live = 0;    ///< most activations held at once
  double comm_s = 0;        ///< gradient sent -> combined gradient received
  double apply_s = 0;       ///< optimizer step
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_stats& x) {
  return f(caf::meta::type_name("stage_stats"), x.worker, x.step, x.busy_s, x.first_op_ns,
           x.last_op_ns, x.peak_live, x.comm_s, x.apply_s);
}

}  // namespace troupe
