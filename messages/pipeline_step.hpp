// The step protocol of pipelines: stage workers exchange activations and their gradients
// directly, and report to the run driver, which drives the steps.
//
// once, before the first step:
//   driver -> stage   (link_atom, previous stage, next stage)   (either may be invalid)
// every step s:
//   driver -> stage   (compute_atom, s)        run the schedule's operations for step s
//   stage -> next stage    (forward_atom, {s, m}, activation)
//   stage -> prev stage    (backward_atom, {s, m}, gradient of the activation)
//   stage -> driver   (gradient_atom, gradient_meta, stage gradient)   after the flush
//   driver -> stage   (update_atom, update_meta, summed over the stage's replicas)
//   stage -> driver   stage_stats
// when evaluating after step s (after every stage has applied it):
//   driver -> stage 0 (evaluate_atom, s); chunks flow on as (forward_atom, {s, c, eval})
//   last stage -> driver   eval_report
// with keep_best or early stopping, when evaluating after step s (pipeline 0's stages):
//   driver -> stage (snapshot_atom, s); stage -> driver (snapshot_atom, s, stage, stage weights)
// after the last step: stage -> driver (weights_atom, worker, stage weights).
// A message for a step a stage has not been told to run yet is kept until it is: activations
// of step s+1 may overtake the driver's (compute_atom, s+1).
#pragma once

#include "core/device/ready_mark.hpp"
#include "core/train/stage_timing.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>

namespace troupe {

struct micro_meta {
  int64_t step = 0;
  int64_t micro = 0;  ///< the micro-batch, or the test chunk when evaluating
  bool eval = false;
  /// On a GPU: when the sender's stream has written the tensor (core/device/ready_mark). Not on
  /// the wire: a pipeline's stages run in one process.
  ready_mark_ptr ready;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, micro_meta& x) {
  return f(caf::meta::type_name("micro_meta"), x.step, x.micro, x.eval);
}

/// A stage's figures for one step (core/train/stage_timing.hpp).
using stage_stats = stage_timing;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, stage_timing& x) {
  return f(caf::meta::type_name("stage_stats"), x.worker, x.step, x.busy_s, x.first_op_ns,
           x.last_op_ns, x.peak_live, x.comm_s, x.apply_s, x.data_wait_s);
}

}  // namespace troupe
