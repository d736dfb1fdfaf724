// How a ring all-reduce moves a buffer: the options every ring takes (the state machine,
// core/collective/ring_allreduce; over sockets, core/collective/socket_ring; over actors,
// actors/exchange/ring_exchange), each default with its reason. A run's rings take the plan's
// (run_plan::ring, from the job's cluster.bucket_mb and cluster.ring_window), never defaults of
// their own.
//
// Thread safety: a plain value.
#pragma once

#include <cstdint>

namespace troupe {

struct ring_options {
  /// Float32 elements per bucket (>= 1). Each bucket reduces on a ring of its own, so a rank
  /// adds one bucket's chunk while the next is on the wire; 2^18 floats is 1 MiB, the job's
  /// default cluster.bucket_mb.
  int64_t bucket_elements = 1 << 18;
  /// Buckets in flight at once (>= 1): bounds what is queued for the network. One was fastest
  /// on loopback (3 processes went from 0.76x to 1.12x gloo at 128 MB); links with a long round
  /// trip may want more (cluster.ring_window).
  int64_t window = 1;
};

}  // namespace troupe
