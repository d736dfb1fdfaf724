// What a peer that got through the handshakes (the token, and with --tls its certificate) can
// still make a troupe process do, and the numbers that bound it. actors/links/guarded_links
// enforces them on every connection between troupe processes, with or without TLS.
//
// CAF 0.17 reads a frame's 32-byte header and then allocates the payload length it announces
// (up to 4 GiB) before reading a byte of it, never closes a connection that stays silent before
// its handshake, and accepts any number of connections; these limits close each of those gaps.
#pragma once

#include <cstddef>
#include <cstdint>

namespace troupe {

struct link_limits {
  /// The largest payload a frame may announce, in bytes: a larger one closes the connection
  /// before anything is allocated. Set from the run (largest_message_bytes) once it is known.
  uint64_t max_message_bytes = uint64_t{16} << 20;
  /// An accepted or opened connection must complete its TLS and CAF handshakes within this long:
  /// loopback and a LAN take milliseconds; 10 s leaves room for a loaded machine.
  double handshake_timeout_s = 10;
  /// A connection on which nothing arrives for this long is closed. Peers send heartbeats every
  /// 0.1 s, so only a hung or vanished peer trips it; runs set it to cluster.node_timeout_s.
  double idle_timeout_s = 10;
  /// Accepted connections not yet joined (in their handshakes, or through them but from a node
  /// that has not joined the run) at once; one more is closed on arrival. A run needs at most
  /// one per node at a time; 64 leaves room for nodes joining together.
  int64_t max_pending = 64;
  /// Where the process knows which nodes joined (its trusted_nodes): an accepted connection whose
  /// node has not joined within this long of connecting is closed. CAF's handshake asks for no
  /// token: without this, a stranger through it could hold connections (and descriptors) for
  /// ever by sending heartbeats. A node joins within a round trip of its handshake.
  double join_timeout_s = 15;
};

/// What a node accepts before it has the job: the join reply carries the plan with the job, a
/// few KiB (the model's parameter names and shapes are the most of it); 16 MiB is room for any
/// plan a coordinator ships (run_cluster refuses a larger one).
constexpr uint64_t pre_join_message_bytes = uint64_t{16} << 20;

/// The largest message a run sends between processes, bounded from above: three flat float32
/// parameter buffers (a checkpoint part carries a replica's weights and its optimizer state,
/// Adam's two moment buffers; local_sgd hands a worker its weights and their average in one
/// message; final weights and async pulls carry one), or one ring bucket, whichever is larger,
/// plus the plan's JSON (core/run/plan_wire) and 1 MiB for the message's framing (type names,
/// metadata, the optimizer archive's records).
uint64_t largest_message_bytes(int64_t parameters, double bucket_mb, std::size_t plan_json_bytes);

}  // namespace troupe
