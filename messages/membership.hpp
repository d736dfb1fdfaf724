// The messages of a run that carries on when a node is lost (cluster.on_node_loss "continue";
// actors/driver/driver_membership.cpp runs the protocol, core/policy/membership and regroup_round
// decide).
//
// a regroup, after a node was lost or before replacements join (at a step boundary):
//   driver -> every live worker  (membership_atom, membership_note, successor)
//        the new epoch and live ranks: the worker takes its share of every batch (and of the
//        evaluation set) by its position among them, its ring successor, drops the step in
//        flight (sync), and answers:
//   worker -> driver  (membership_atom, regroup_answer{epoch, rank, applied, has_state})
//   driver -> donor   (handover_atom, epoch)            hand in your state, now
//   donor -> driver   (handover_atom, handed_state{epoch, rank, step, weights, optimizer})
//   driver -> each worker behind, and each replacement:
//                     (state_atom, state_chunk) ...      the state, in checked chunks
//   worker -> driver  (taken_atom, state_taken{epoch, rank, step})    verified and adopted
//   then, where the regroup admitted a replacement, the driver asks every live worker for a
//   digest of its weights before it releases the next step:
//   driver -> worker  (digest_atom, epoch)
//   worker -> driver  (digest_atom, digest_report{epoch, rank, step, SHA-256 of its flat
//                     weights, hex})
//        the replicas that must agree (core/run/replica_digests) are compared; a difference
//        ends the run naming the replica;
//   then the driver releases the next step to the live workers, under the new epoch.
// every message about a step carries its epoch (gradient_meta, ring_meta): what a worker sent
// under an older membership (a stopped node that comes back) is dropped.
// the step watchdog, before it names who holds a step up:
//   driver -> worker  (probe_atom)  ->  worker -> driver (probe_atom, worker_probe)
// a node cut off from the run (the driver gave up on it and went on):
//   driver -> node agent  (leave_atom, why)              the node exits
// a replacement node that joined and loaded its data (gatekeeper -> driver, in one process):
//   (replace_atom, replacement_node)
#pragma once

#include "messages/tensor_wire.hpp"

#include <ATen/core/Tensor.h>
#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct membership_note {
  int64_t epoch = 0;
  std::vector<int64_t> live;  ///< ascending ranks
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, membership_note& x) {
  return f(caf::meta::type_name("membership_note"), x.epoch, x.live);
}

/// A worker's answer to the regroup of `epoch`: the last step it applied, and whether it holds a
/// state (a replacement does not yet).
struct regroup_answer {
  int64_t epoch = 0;
  int64_t rank = 0;
  int64_t applied = 0;
  bool has_state = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, regroup_answer& x) {
  return f(caf::meta::type_name("regroup_answer"), x.epoch, x.rank, x.applied, x.has_state);
}

/// A donor's state after `step`, for the workers behind and the replacements of `epoch`.
struct handed_state {
  int64_t epoch = 0;
  int64_t rank = 0;
  int64_t step = 0;
  at::Tensor weights;
  std::string optimizer;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, handed_state& x) {
  return f(caf::meta::type_name("handed_state"), x.epoch, x.rank, x.step, x.weights, x.optimizer);
}

/// A worker verified and adopted the state after `step` handed to it in `epoch`.
struct state_taken {
  int64_t epoch = 0;
  int64_t rank = 0;
  int64_t step = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, state_taken& x) {
  return f(caf::meta::type_name("state_taken"), x.epoch, x.rank, x.step);
}

/// The SHA-256 (hex) of a worker's flat weights after `step`, asked in `epoch`.
struct digest_report {
  int64_t epoch = 0;
  int64_t rank = 0;
  int64_t step = 0;
  std::string sha256;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, digest_report& x) {
  return f(caf::meta::type_name("digest_report"), x.epoch, x.rank, x.step, x.sha256);
}

/// One chunk of a worker's state (its flat float32 weights, then its optimizer's state bytes).
/// Every chunk repeats the whole's sizes and SHA-256, so the receiver checks each chunk against
/// them and the whole once the last is in.
struct state_chunk {
  int64_t epoch = 0;
  int64_t step = 0;  ///< the state after this step
  int64_t index = 0;
  int64_t count = 0;
  int64_t chunk_bytes = 0;   ///< of every chunk but the last
  int64_t weight_bytes = 0;  ///< the first weight_bytes of the whole: the weights
  int64_t total_bytes = 0;
  std::string digest;  ///< SHA-256 of the whole, hex
  std::string bytes;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, state_chunk& x) {
  return f(caf::meta::type_name("state_chunk"), x.epoch, x.step, x.index, x.count, x.chunk_bytes,
           x.weight_bytes, x.total_bytes, x.digest, x.bytes);
}

/// What a replica worker is doing, for the step watchdog: the step it runs (or next runs) and,
/// within a ring all-reduce, how many chunks of it came from its predecessor.
struct worker_probe {
  int64_t worker = 0;
  int64_t epoch = 0;
  int64_t step = 0;
  bool busy = false;     ///< a step is under way (waiting for its sum or average)
  bool in_ring = false;  ///< waiting inside a ring all-reduce
  int64_t received = 0;  ///< ring chunks received for that step
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_probe& x) {
  return f(caf::meta::type_name("worker_probe"), x.worker, x.epoch, x.step, x.busy, x.in_ring,
           x.received);
}

/// A node that joined a running job as a replacement and is ready to start replicas.
struct replacement_node {
  std::string name;
  caf::actor agent;
  std::string peer_host;
  uint16_t peer_port = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, replacement_node& x) {
  return f(caf::meta::type_name("replacement_node"), x.name, x.agent, x.peer_host, x.peer_port);
}

}  // namespace troupe
