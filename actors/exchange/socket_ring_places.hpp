// A node's side of forming the socket ring (messages/cluster.hpp, ring_places): a listener per
// rank it hosts, each rank's connection to its successor, and once every predecessor is in, one
// socket_ring per rank for that rank's replica worker to take. The coordinator drives the three
// steps on every node in turn (open, connect, join), so that no node waits on another's step.
// Under cluster.collective "gloo" the same steps form gloo's full mesh instead
// (core/collective/gloo_mesh): open answers each rank's part of the rendezvous, connect hands
// every member's, join waits for the connections.
//
// A ring belongs to a membership epoch. Under cluster.on_node_loss "continue" the coordinator
// forms a new one among the live ranks at every regroup: opening it drops whatever an earlier
// epoch left here (a forming cut short, rings no replica took), and a replica takes the ring of
// its own epoch, or finds none and sums over actors.
//
// Thread safety: every member locks; the node agent forms, the workers take.
#pragma once

#include "core/collective/cross_process_sum.hpp"
#include "core/collective/gloo_mesh.hpp"
#include "core/collective/ring_options.hpp"
#include "core/collective/ring_sockets.hpp"
#include "core/collective/socket_ring.hpp"
#include "core/job/job_config.hpp"
#include "messages/cluster.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe {

class socket_ring_places {
 public:
  /// `tls`: the node's TLS context (its certificate, the cluster's CA): every ring formed here
  /// is encrypted with it (socket_ring::secure); null: plain TCP. `collective`: what the steps
  /// form; a gloo mesh's connections and sums give up after `gloo_timeout_s`.
  explicit socket_ring_places(ssl_ctx_st* tls = nullptr,
                              node_collective collective = node_collective::ring,
                              double gloo_timeout_s = 30);
  ~socket_ring_places();
  socket_ring_places(const socket_ring_places&) = delete;
  socket_ring_places& operator=(const socket_ring_places&) = delete;

  /// Listens on `host` for the predecessor of each of the ranks of `places` in the ring of its
  /// epoch: the places with their ports, in their order (gloo: with their rendezvous parts).
  /// Throws std::invalid_argument for an epoch not after the last one opened, ring_link_error.
  ring_places open(ring_places places, const std::string& host);

  /// Connects each rank to its successor's listener, saying the ring's secret. Throws
  /// std::invalid_argument for places that do not fit what was opened, ring_link_error.
  void connect(const ring_places& places, double timeout_s);

  /// Takes each rank's predecessor's connection and forms its ring, its buckets and window as
  /// `options` says (socket_ring).
  void join(const ring_places& places, const ring_options& options, double timeout_s);

  /// Rank `rank`'s ring of `epoch`, once; null when none was formed here for that epoch (the
  /// ring then runs over actors). Throws std::logic_error when one was formed but holds no ring
  /// for `rank` (taken already, or not a member): the others would wait on it for ever.
  std::unique_ptr<cross_process_sum> take(int64_t rank, int64_t epoch);

  /// Drops everything formed or being formed: until a ring is formed again, replicas sum over
  /// actors.
  void clear();

 private:
  void check(const ring_places& places) const;
  void drop_locked();
  void join_mesh(const ring_places& places, double timeout_s);

  ssl_ctx_st* tls_ = nullptr;  ///< a reference of ours: OpenSSL counts them
  node_collective collective_;
  double gloo_timeout_s_;
  mutable std::mutex mutex_;
  int64_t epoch_ = -1;   ///< of the ring formed or being formed
  bool formed_ = false;  ///< the ring of epoch_ was joined here
  std::vector<int64_t> ranks_;
  std::map<int64_t, std::unique_ptr<ring_listener>> listeners_;
  std::map<int64_t, socket_fd> outgoing_;
  std::map<int64_t, std::unique_ptr<gloo_mesh>> meshes_;  ///< gloo: each rank's, forming
  std::map<int64_t, std::unique_ptr<cross_process_sum>> rings_;
};

/// What the places' steps form under `collective`: "socket ring" or "gloo mesh".
const char* collective_name(node_collective collective);

/// The ring's secret as the places carry it (32 bytes in a string).
std::string ring_secret_bytes();

/// What the coordinator sends each of `nodes` nodes to form the ring of `epoch` among `members`
/// (ring order), member k hosted by node `node_of_member[k]`: its ranks, a fresh secret, the
/// epoch and the members.
std::vector<ring_places> plan_ring_places(int64_t epoch, const std::vector<int64_t>& members,
                                          const std::vector<std::size_t>& node_of_member,
                                          std::size_t nodes);

/// What is wrong with a node's answer to a step of forming (`asked`: the places it was sent):
/// the ranks it was asked for, each with a port. "" when nothing is.
std::string ring_answer_problem(const ring_places& asked, const ring_places& answer);

/// Once every node answered open with its ports (node i listening at `hosts[i]`): each rank's
/// successor's listener, into every node's places. Gloo: every member's rendezvous part.
void link_ring_places(std::vector<ring_places>& places, const std::vector<std::string>& hosts);

}  // namespace troupe
