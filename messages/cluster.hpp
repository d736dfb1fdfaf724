// The messages between a coordinator and the nodes that join it over the network, and between
// the replicas of a ring all-reduce.
//
// joining (the coordinator publishes only its gatekeeper):
//   node -> gatekeeper   (challenge_atom) -> challenge: fresh, for this node's connection
//   node -> gatekeeper   (join_atom, join_request)  -> join_reply: the request proves the token
//                                                     over that challenge, never carries it
//   a refusal (bad token, another certificate's name, other version, duplicate name, run
//   already placed) carries the reason; an acceptance carries the job, so that every node trains
//   what the coordinator planned.
//   node -> model server (chunk_atom, offset) -> bytes: a torchscript model file, in chunks,
//                                                     checked against the reply's SHA-256
//   node -> gatekeeper   (join_atom, failure) -> ok   the node loaded its data and is ready ("")
//                                                     or cannot take the job (why)
// placing (coordinator -> node agent):
//   (trust_atom, node_id)                   messages from this node (a peer) are accepted
//   (connect_atom, host, port, name) -> ok  open a direct connection to peer `name`'s agent, so
//                                           that ring traffic does not relay through the hub
//                                           (with TLS its certificate must name `name`)
//   (shm_atom, host_segment) -> ok          create (or open, and find the nonce in) the
//                                           shared-memory segment through which this node's
//                                           replicas will sum sync gradients with the other
//                                           ranks of their host; an error where it cannot
//                                           (another host). A segment of no ranks is a probe:
//                                           whoever can open it shares the creator's host
//   (shm_atom, close_atom, keep) -> ok      every node has it: remove its name (keep: true),
//                                           or not all could: drop it (keep: false)
//   (ring_atom, open_atom, ring_places) -> ring_places   listen for the predecessor of each of
//                                           this node's ranks (core/collective/ring_sockets):
//                                           answered with their ports
//   (ring_atom, connect_atom, ring_places) -> ok   connect each rank to its successor's
//                                           listener, saying the ring's secret
//   (ring_atom, join_atom, ring_places) -> ok      take each rank's predecessor's connection:
//                                           the socket ring is formed; an error at any of the
//                                           three and the coordinator falls back to the ring
//                                           over actors, after (ring_atom, close_atom) -> ok
//                                           The ring is formed for a membership epoch among its
//                                           members: before the replicas start (epoch 0, every
//                                           rank), and under cluster.on_node_loss "continue"
//                                           again at every regroup, among the live ranks
//   (spawn_atom, rank, coordinator) -> actor   start replica `rank` here
//   (done_atom, status)                     the run is over: the node exits
// the ring over actors (replica -> its successor): (ring_atom, ring_meta, chunk)
#pragma once

#include <caf/actor.hpp>
#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct join_request {
  std::string version;     ///< the node's troupe version: it must equal the coordinator's
  std::string proof;       ///< join_proof of the token over the challenge ("": no token)
  std::string name;        ///< unique among the nodes of a run
  int64_t threads = 0;     ///< compute threads the node offers
  std::string peer_host;   ///< where the node's agent listens for peers
  uint16_t peer_port = 0;  ///< 0: the node takes no peer connections
  caf::actor agent;        ///< the node's agent: spawns replicas there
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_request& x) {
  return f(caf::meta::type_name("join_request"), x.version, x.proof, x.name, x.threads, x.peer_host,
           x.peer_port, x.agent);
}

/// The files of the job beside its JSON (core/cluster/shipped_files): the data files each node
/// must hold with the same size and SHA-256, and the model file it fetches from `model_server`
/// with (chunk_atom, offset) -> std::string (at most shipped_chunk_bytes from offset).
struct shipment {
  std::vector<std::string> data_paths;
  std::vector<int64_t> data_bytes;
  std::vector<std::string> data_sha256;
  caf::actor model_server;  ///< unset: no model file to fetch (a built-in model)
  std::string model_path;   ///< the coordinator's, for messages
  int64_t model_bytes = 0;
  std::string model_sha256;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, shipment& x) {
  return f(caf::meta::type_name("shipment"), x.data_paths, x.data_bytes, x.data_sha256,
           x.model_server, x.model_path, x.model_bytes, x.model_sha256);
}

struct join_reply {
  std::string refusal;  ///< empty: accepted
  /// When accepted: the coordinator's plan (core/run/plan_wire), which the node takes as it is
  /// instead of planning again, and its SHA-256 for the node to check what it decoded against.
  std::string plan_json;
  std::string plan_digest;
  shipment files;  ///< when accepted
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, join_reply& x) {
  return f(caf::meta::type_name("join_reply"), x.refusal, x.plan_json, x.plan_digest, x.files);
}

/// Which part of which all-reduce a chunk belongs to: the training step (`round`), the bucket
/// and the ring step (core/collective/ring_allreduce.hpp).
struct ring_meta {
  int64_t round = 0;
  int64_t bucket = 0;
  int64_t step = 0;
  /// The membership epoch of the ring it belongs to: a chunk of an older ring (sent by a node
  /// that was given up on, or before a regroup) is dropped.
  int64_t epoch = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ring_meta& x) {
  return f(caf::meta::type_name("ring_meta"), x.round, x.bucket, x.step, x.epoch);
}

/// A node's places in the socket ring (core/collective/socket_ring.hpp), which sync gradients
/// take between node processes where neither shared memory nor TLS is in use: its ranks, and
/// what the step of forming the ring needs of them.
/// A shared-memory segment for the replicas of one host's nodes (the shm message).
struct host_segment {
  std::string name;  ///< in /dev/shm: "/troupe-..."
  uint64_t nonce = 0;
  bool create = false;  ///< this node makes it; the others open it
  /// The run's ranks whose gradients it sums, ascending (slot k is ranks[k]'s); empty for a
  /// probe, a one-slot segment that only tells who shares the creator's /dev/shm.
  std::vector<int64_t> ranks;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, host_segment& x) {
  return f(caf::meta::type_name("host_segment"), x.name, x.nonce, x.create, x.ranks);
}

struct ring_places {
  std::vector<int64_t> ranks;           ///< this node's, ascending
  std::vector<uint16_t> ports;          ///< each rank's listener (the node's answer to open)
  std::vector<std::string> next_hosts;  ///< each rank's successor's listener
  std::vector<uint16_t> next_ports;
  std::string secret;            ///< 32 bytes, the same for the whole ring
  int64_t epoch = 0;             ///< the membership the ring is formed for
  std::vector<int64_t> members;  ///< every rank in the ring, in ring order (the live ones)
  /// cluster.collective "gloo" instead of ports: each of this node's ranks' part of gloo's
  /// rendezvous (the answer to open), then every member's, in ring order (to connect).
  std::vector<std::string> mesh;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, ring_places& x) {
  return f(caf::meta::type_name("ring_places"), x.ranks, x.ports, x.next_hosts, x.next_ports,
           x.secret, x.epoch, x.members, x.mesh);
}

}  // namespace troupe
