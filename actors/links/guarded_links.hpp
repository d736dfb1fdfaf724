// Every connection between troupe processes, opened and accepted under troupe's rules: with
// --tls each is mutual TLS (actors/links/tls_session.hpp), and with or without it the limits of
// core/cluster/link_limits.hpp hold: a frame announcing more than the largest message closes
// its connection before anything is allocated, a connection that does not finish its
// handshakes in time or falls silent is closed, and accepted connections still in their
// handshakes are bounded. Each refusal is logged with its reason.
//
// How: CAF's middleman actor lets a subclass choose how connections are made (connect, open);
// ours hands CAF's BASP broker connections whose bytes go through a policy of our own. Publish
// and connect through this object's middleman(), never through system.middleman()'s.
//
// A peer's certificate name is bound to its connection's address: ask the middleman actor
// (get_atom, node) for the address of a node's direct connection, then peer_name() (see
// with_peer_name). The gatekeeper does so before a node joins under a name; a node does so
// before it trusts the coordinator or a ring neighbour.
#pragma once

#include "core/cluster/certs.hpp"
#include "core/cluster/link_limits.hpp"

#include <caf/expected.hpp>
#include <caf/fwd.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/node_id.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

struct ssl_ctx_st;

namespace troupe {

struct link_options {
  std::optional<tls_files> tls;  ///< none: plain TCP (loopback, or --insecure)
  link_limits limits;
  /// One line per refused or closed connection; called on CAF's threads.
  std::function<void(const std::string&)> log;
};

struct link_state;

/// The certificate names of live connections, by the peer's address; shareable with actors.
class peer_names {
 public:
  explicit peer_names(std::shared_ptr<const link_state> state) : state_(std::move(state)) {}
  /// The CN the peer at addr:port presented; "" without TLS or without such a connection.
  std::string at(const std::string& addr, uint16_t port) const;

 private:
  std::shared_ptr<const link_state> state_;
};

/// One actor system's connections. Build it once the system runs; destroy it before the system
/// (it stops its middleman actor, whose thread the system's shutdown would wait for).
class guarded_links {
 public:
  /// Throws std::runtime_error when the TLS files cannot be loaded.
  guarded_links(caf::actor_system& system, link_options options);
  ~guarded_links();
  guarded_links(const guarded_links&) = delete;
  guarded_links& operator=(const guarded_links&) = delete;

  /// Publishes `whom` on host:port (port 0: the OS picks); the port, or why not.
  caf::expected<uint16_t> publish(const caf::actor& whom, uint16_t port, const std::string& host);
  void unpublish(const caf::actor& whom, uint16_t port);
  /// Answers (connect_atom, host, port) and (get_atom, node_id) as CAF's middleman actor does.
  const caf::io::middleman_actor& middleman() const { return middleman_; }
  bool tls() const;
  /// The TLS context every connection of this process uses (OpenSSL's, for the socket ring to
  /// encrypt with the same certificates); null without TLS.
  ssl_ctx_st* tls_native() const;
  peer_names names() const;
  /// Why TLS last refused a connection this process opened ("" if it never did): a refusal that
  /// retrying will not change (the peer does not accept this process's certificate).
  std::string last_tls_failure() const;
  /// For the whole process from now on, e.g. once a node knows the job.
  void set_max_message_bytes(uint64_t bytes);
  /// From now on an accepted connection counts against max_pending until `has_joined` says
  /// the node its handshake named joined the run, and is closed when that takes longer than
  /// join_timeout_s (a stranger's connection, held open by heartbeats). Called by whoever
  /// decides which nodes joined (the coordinator's gatekeeper, a node's agent), before
  /// publishing. Thread-safe; `has_joined` is called from the warden's thread.
  void judge_joins_by(std::function<bool(const caf::node_id&)> has_joined);
  void set_idle_timeout(double seconds);

 private:
  std::shared_ptr<link_state> state_;
  caf::io::middleman_actor middleman_;
  struct warden;
  std::unique_ptr<warden> warden_;
};

/// Finds the certificate name node `node` presented on its direct connection, then calls
/// `then(name)`: "" when it presented none, has no direct connection, or the middleman did not
/// answer within 5 s.
template <class Self, class F>
void with_peer_name(Self* self, const caf::io::middleman_actor& middleman, const peer_names& names,
                    const caf::node_id& node, F then) {
  self->request(middleman, std::chrono::seconds(5), caf::get_atom_v, node)
      .then([names, then](const caf::node_id&, const std::string& addr,
                          uint16_t port) mutable { then(names.at(addr, port)); },
            [then](const caf::error&) mutable { then(std::string()); });
}

}  // namespace troupe
