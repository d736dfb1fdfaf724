// The step protocols between the run driver and its replica workers (the strategies of
// core/policy decide when each message is due).
//
// sync, every step:
//   driver -> worker  (compute_atom, step)                    start computing `step`
//   worker -> driver  (gradient_atom, gradient_meta, grad)    my gradient for meta.step
//   driver -> worker  (update_atom, update_meta, combined)    apply; then evaluate and/or go on
//   (where the replicas sum among themselves, gradient_meeting in the plan, the middle two are
//   replaced by that sum, and the worker goes on at once)
// local_sgd: workers step alone, reporting step_stats; at each averaging step:
//   worker -> driver  (average_atom, gradient_meta, weights, momenta)
//   driver -> worker  (averaged_atom, update_meta, weights, momenta)
//   (momenta is an undefined tensor unless parallelism.average_momenta is set)
// sync and local_sgd, after the last step:
//   worker -> driver  (weights_atom, rank, weights)
// with keep_best or early stopping, after each evaluation (rank 0, or the parameter server):
//   worker -> driver  (snapshot_atom, step, 0, the weights it evaluated)
// async (parameter server: an actor of its own holds the weights and the optimizer):
//   server -> worker  (params_atom, version, step, weights)    compute `step` on these
//   worker -> driver  (push_atom, gradient_meta, version, grad)
//   driver -> server  (apply_atom, lr, grad)                   apply it at once
//   driver -> server  (hand_out_atom, worker, version, step)   send the worker the weights
//   the driver hands out the next weights when the staleness bound lets the worker go on,
//   and nothing once the worker has done every step; the server evaluates when told
//   (evaluate_atom, step) and answers a weights request with its final weights.
//
// Control fields travel in inspectable structs; tensors travel beside them as separate message
// elements, by handle inside a process (no copy). A sender never writes to a tensor it has sent
// until the receiver's answer shows that the receiver is done with it.
#pragma once

#include "core/policy/step_rules.hpp"

#include <caf/meta/type_name.hpp>

#include <cstdint>

namespace troupe {

struct gradient_meta {
  int64_t worker = 0;
  int64_t step = 0;
  double loss = 0;      ///< mean over the worker's rows
  int64_t samples = 0;  ///< the worker's rows in this step
  /// The membership epoch it was computed in (messages/membership.hpp): the driver drops a
  /// gradient or weights of an older one (the step was abandoned and is being redone).
  int64_t epoch = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gradient_meta& x) {
  return f(caf::meta::type_name("gradient_meta"), x.worker, x.step, x.loss, x.samples, x.epoch);
}

/// What follows the update: evaluate the test shard after applying it, or (the last step) send
/// the final weights instead of going on. The plan's step_rules decide it.
using update_meta = step_outcome;

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_outcome& x) {
  return f(caf::meta::type_name("update_meta"), x.step, x.evaluate, x.last);
}

}  // namespace troupe
