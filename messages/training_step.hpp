// The step protocols between the coordinator and its replica workers.
//
// sync, every step:
//   coordinator -> worker  (compute_atom, step)                  start computing `step`
//   worker -> coordinator  (gradient_atom, gradient_meta, grad)  my gradient for meta.step
//   coordinator -> worker  (update_atom, update_meta, combined)  apply; then evaluate and/or go on
// local_sgd: workers step alone, reporting step_stats; at each averaging step:
//   worker -> coordinator  (average_atom, gradient_meta, weights, momenta)
//   coordinator -> worker  (averaged_atom, update_meta, weights, momenta)
//   (momenta is an undefined tensor unless parallelism.average_momenta is set)
// sync and local_sgd, after the last step:
//   worker -> coordinator  (weights_atom, rank, weights)
// async (parameter server: the coordinator holds the weights and the optimizer):
//   coordinator -> worker  (params_atom, version, step, weights)   compute `step` on these
//   worker -> coordinator  (push_atom, gradient_meta, version, grad)
//   the coordinator applies each push at once; it sends the next weights when the staleness
//   bound lets the worker go on, and nothing once the worker has done every step.
//
// Control fields travel in inspectable structs; tensors travel beside them as separate message
// elements, by handle inside a process (no copy). A sender never writes to a tensor it has sent
// until the receiver's answer shows that the receiver is done with it.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>

namespace troupe {

struct gradient_meta {
  int64_t worker = 0;
  int64_t step = 0;
  double loss = 0;      ///< mean over the worker's rows
  int64_t samples = 0;  ///< the worker's rows in this step
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, gradient_meta& x) {
  return f(caf::meta::type_name("gradient_meta"), x.worker, x.step, x.loss, x.samples);
}

struct update_meta {
  int64_t step = 0;       ///< the step this combined gradient completes
  bool evaluate = false;  ///< evaluate the test shard after applying it
  bool last = false;      ///< no further step: send the final weights instead
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, update_meta& x) {
  return f(caf::meta::type_name("update_meta"), x.step, x.evaluate, x.last);
}

}  // namespace troupe
