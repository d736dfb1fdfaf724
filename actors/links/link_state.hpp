// The state one process's guarded connections share (actors/links/guarded_links): the limits, the
// TLS context, the live connections the warden watches and the certificate names by address.
// Internal to guarded_links and its connections. Thread-safe as each member says: the
// multiplexer's thread, the middleman actor, the warden and the actors asking for names all
// touch it.
#pragma once

#include "actors/links/tls_session.hpp"
#include "core/cluster/link_limits.hpp"

#include <caf/io/network/native_socket.hpp>
#include <caf/node_id.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>

namespace troupe {

using link_clock = std::chrono::steady_clock;

/// What the warden needs to know about one connection; owned by its scribe.
struct watched_connection {
  caf::io::network::native_socket fd;
  std::string peer;  ///< "addr:port" of the other end
  bool accepted;     ///< the other end connected to us (it counts against max_pending)
  link_clock::time_point opened = link_clock::now();
  std::atomic<link_clock::rep> last_read{opened.time_since_epoch().count()};
  std::atomic<bool> established{false};  ///< handshakes done: a first whole frame arrived
  /// An accepted connection's node joined (or the process judges no joins): it no longer counts
  /// against max_pending. Set once, by whoever exchanges it first.
  std::atomic<bool> joined{false};
  caf::node_id node{};               ///< the node its CAF handshake named; guarded by the mutex
  std::atomic<bool> closing{false};  ///< troupe closed it (said why once)
  void touch() {
    last_read.store(link_clock::now().time_since_epoch().count(), std::memory_order_relaxed);
  }
};

/// What the log reports, each kind rate-limited on its own.
enum class link_event {
  refused,    ///< the TLS handshake failed, or the peer left during it
  crowded,    ///< max_pending connections were already in their handshakes
  late,       ///< no handshake within handshake_timeout_s
  unjoined,   ///< through the handshakes, but its node did not join within join_timeout_s
  silent,     ///< nothing arrived for idle_timeout_s
  oversized,  ///< a frame announced more than max_message_bytes
  forged,     ///< a frame CAF would mishandle (actors/links/basp_frames)
  broken,     ///< a TLS error after the handshake
  count
};

struct link_state {
  link_limits limits;  ///< handshake_timeout_s and max_pending; the rest below may change
  std::function<void(const std::string&)> log_line;
  std::unique_ptr<tls_context> tls;  ///< null: plain TCP
  std::atomic<uint64_t> max_message_bytes{0};
  std::atomic<int64_t> idle_timeout_ns{0};
  std::atomic<int64_t> pending{0};  ///< accepted connections not yet joined
  /// Whether a node joined the run; null: the process has no joins to judge by, and a connection
  /// counts as joined once its handshakes are done. Guarded by mutex.
  std::function<bool(const caf::node_id&)> has_joined;
  /// Lines logged so far, by kind of event.
  std::array<std::atomic<int64_t>, static_cast<std::size_t>(link_event::count)> logged{};
  mutable std::mutex mutex;
  std::set<watched_connection*> connections;  ///< guarded by mutex; a member keeps its fd open
  /// "addr:port" -> (connection, the CN its certificate names); guarded by mutex.
  std::map<std::string, std::pair<const watched_connection*, std::string>> names;
  std::string last_tls_failure;  ///< of a connection this process opened; guarded by mutex

  /// Logs `line`, rate-limited per kind: every line up to 20, then every 100th with a count.
  void log(link_event kind, const std::string& line);
  /// Counts `c` as joined (once): it leaves the accepted connections pending.
  void count_joined(watched_connection& c);
  /// Ends `c` from any thread, saying why once: the multiplexer then reads end-of-file and CAF
  /// cleans up as for any connection that closed. The caller keeps `c` alive (it is its
  /// scribe's, or the caller holds `mutex`).
  void close(watched_connection& c, link_event kind, const std::string& why);
};

/// "addr:port" of the other end of `fd`.
std::string address_of(caf::io::network::native_socket fd);

}  // namespace troupe
