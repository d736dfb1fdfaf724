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
//   worker -> driver  (average_atom, weights_hand_in{meta, weights, momenta})
//   driver -> worker  (averaged_atom, averaged_weights{outcome, weights, momenta})
//   (momenta is an undefined tensor unless parallelism.average_momenta is set)
// sync and local_sgd, after the last step:
//   worker -> driver  (weights_atom, rank, weights)
// with keep_best or early stopping, after each evaluation (rank 0, or the parameter server):
//   worker -> driver  (snapshot_atom, step, 0, the weights it evaluated)
// async (parameter server: an actor of its own holds the weights and the optimizer):
//   server -> worker  (params_atom, server_weights{version, step, weights})  compute `step`
//   worker -> driver  (push_atom, async_push{meta, version, gradient})
//   driver -> server  (apply_atom, lr, rank, grad)             apply it at once
//   driver -> server  (hand_out_atom, hand_out{worker, rank, version, step})  send it the weights
//   the driver hands out the next weights when the staleness bound lets the worker go on,
//   and nothing once the worker has done every step; the server evaluates when told
//   (evaluate_atom, step) and answers a weights request with its final weights.
// async with a sharded server (parallelism.ps_shards > 1: actors/workers/server_shard): the
// server in the driver's process passes the driver's words on to every shard in order, and the
// tensors go between workers and shards directly:
//   server -> shard   (apply_atom, lr, rank, undefined), (hand_out_atom, hand_out)
//   shard -> worker   (params_atom, server_weights{version, step, shard, slice})
//   worker -> shard   (push_atom, async_push{meta, version, slice}) -> ok   (to every shard;
//                     then the push to the driver, with an undefined gradient)
//   server -> worker  (link_atom, shards)   the shards, at the start and after one was replaced
//
// A message of more than two fields is one inspectable struct (beside its atom); tensors in it
// travel by handle inside a process (no copy: CAF never serializes a local message) and as
// checked bytes between processes (messages/tensor_wire.hpp). A sender never writes to a tensor
// it has sent until the receiver's answer shows that the receiver is done with it.
#pragma once

#include "core/policy/step_rules.hpp"
#include "messages/tensor_wire.hpp"

#include <ATen/core/Tensor.h>
#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>

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

/// local_sgd: a replica's weights (whole, or packed as their difference from the last average)
/// and, with average_momenta, its momenta, at an averaging step.
struct weights_hand_in {
  gradient_meta meta;
  at::Tensor weights;
  at::Tensor momenta;  ///< undefined unless momenta are averaged
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, weights_hand_in& x) {
  return f(caf::meta::type_name("weights_hand_in"), x.meta, x.weights, x.momenta);
}

/// local_sgd: the average the driver sends back, and what follows it.
struct averaged_weights {
  update_meta outcome;
  at::Tensor weights;
  at::Tensor momenta;  ///< undefined unless momenta are averaged
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, averaged_weights& x) {
  return f(caf::meta::type_name("averaged_weights"), x.outcome, x.weights, x.momenta);
}

/// async: a worker's gradient, computed on the server's weights of `version`.
struct async_push {
  gradient_meta meta;
  int64_t version = 0;
  at::Tensor gradient;  ///< whole, or packed (parallelism.compression)
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, async_push& x) {
  return f(caf::meta::type_name("async_push"), x.meta, x.version, x.gradient);
}

/// async: the parameter server's weights of `version`, for the worker to compute `step` on.
struct server_weights {
  int64_t version = 0;
  int64_t step = 0;
  int64_t shard = 0;   ///< a sharded server: whose slice this is (0 for a whole server)
  at::Tensor weights;  ///< whole (or a shard's slice), or packed as the difference from the
                       ///< worker's copy
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, server_weights& x) {
  return f(caf::meta::type_name("server_weights"), x.version, x.step, x.shard, x.weights);
}

/// async: the driver's word to the server to send `worker` its weights for `step`.
struct hand_out {
  caf::actor worker;
  int64_t rank = 0;
  int64_t version = 0;  ///< the version the worker holds
  int64_t step = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, hand_out& x) {
  return f(caf::meta::type_name("hand_out"), x.worker, x.rank, x.version, x.step);
}

/// A replica's socket ring ended a sum (`round` >= 0, `error` empty when it succeeded), or the
/// time a broken one waits for the driver's account is up (`round` -1): a message a replica
/// sends itself, from its ring's thread.
struct socket_sum_end {
  int64_t epoch = 0;
  int64_t round = 0;
  std::string error;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, socket_sum_end& x) {
  return f(caf::meta::type_name("socket_sum_end"), x.epoch, x.round, x.error);
}

}  // namespace troupe
