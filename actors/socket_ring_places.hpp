// A node's side of forming the socket ring (messages/cluster.hpp, ring_places): a listener per
// rank it hosts, each rank's connection to its successor, and once every predecessor is in, one
// socket_ring per rank for that rank's replica worker to take. The coordinator drives the three
// steps on every node in turn (open, connect, join), so that no node waits on another's step.
//
// Thread safety: every member locks; the node agent forms, the workers take.
#pragma once

#include "core/collective/ring_sockets.hpp"
#include "core/collective/socket_ring.hpp"
#include "messages/cluster.hpp"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe {

class socket_ring_places {
 public:
  /// Listens on `host` for the predecessor of each of `ranks`: the ports, in their order.
  std::vector<uint16_t> open(const std::vector<int64_t>& ranks, const std::string& host);

  /// Connects each rank to its successor's listener, saying the ring's secret. Throws
  /// std::invalid_argument for places that do not fit what was opened, ring_link_error.
  void connect(const ring_places& places, double timeout_s);

  /// Takes each rank's predecessor's connection and forms its ring.
  void join(const ring_places& places, int64_t bucket_elements, double timeout_s);

  /// Rank `rank`'s ring, once; null when it has none (or it was taken).
  std::unique_ptr<socket_ring> take(int64_t rank);

 private:
  void check(const ring_places& places) const;

  mutable std::mutex mutex_;
  std::vector<int64_t> ranks_;
  std::map<int64_t, std::unique_ptr<ring_listener>> listeners_;
  std::map<int64_t, socket_fd> outgoing_;
  std::map<int64_t, std::unique_ptr<socket_ring>> rings_;
};

/// The ring's secret as the places carry it (32 bytes in a string).
std::string ring_secret_bytes();

}  // namespace troupe
