// What every worker of a run shares, read-only: the plan, the data, the weights every replica
// starts from, and (across processes) which nodes may talk to it.
#pragma once

#include "actors/exchange/socket_ring_places.hpp"
#include "actors/links/trusted_nodes.hpp"
#include "core/collective/host_reduction.hpp"
#include "core/collective/replica_reduction.hpp"
#include "core/data/dataset.hpp"
#include "core/run/run_plan.hpp"

#include <ATen/core/Tensor.h>

#include <chrono>
#include <memory>
#include <vector>

namespace troupe {

struct worker_context {
  std::shared_ptr<const run_plan> plan;
  dataset_ptr data;
  at::Tensor initial_weights;  ///< flat; each worker copies it into its own model
  /// Nodes whose messages workers accept; null inside one process.
  std::shared_ptr<trusted_nodes> trusted;
  /// Gradients meeting in shared memory: where the replicas sum them; null otherwise. The
  /// driver aborts it when the run ends, so that no replica waits in it for ever.
  std::shared_ptr<replica_reduction> reduction;
  /// Across node processes of one host: the shared-memory segment through which sync gradients
  /// are summed instead of the ring (set by the node agent when the coordinator says so); null
  /// otherwise. The agent aborts it when the node stops.
  std::shared_ptr<host_reduction> host;
  /// The ranks whose slots `host` holds, ascending: every rank of the run where all nodes are on
  /// this host, else this host's (a hierarchical sum: the first one, the host's leader, sums
  /// the hosts' sums over the socket ring among the leaders, then broadcasts the total).
  std::vector<int64_t> host_ranks;
  /// Across node processes whose replicas sum over a ring: this node's places in the socket
  /// ring (plain TCP between ring neighbours), where the coordinator forms it (no shared memory,
  /// no TLS) for each membership epoch, each ring taken by its rank's replica; null inside one
  /// process. A replica that finds no ring of its epoch sums over actors.
  std::shared_ptr<socket_ring_places> socket_rings;
};

using context_ptr = std::shared_ptr<const worker_context>;

/// Rank `rank`'s slot in `c.host` (its place among host_ranks). Throws std::logic_error for a
/// rank the segment does not hold.
int64_t host_slot(const worker_context& c, int64_t rank);
/// Whether `c.host` holds only some of the run's ranks: the host's part of a hierarchical sum.
bool host_is_partial(const worker_context& c);

/// How long a replica spins at a reduction's barrier before it sleeps: 200 us while `threads`
/// (all replicas', on one host) fit the host's `hardware_threads` cores, else 0.
std::chrono::microseconds barrier_spin(int64_t threads, unsigned hardware_threads);
/// With the plan's threads and cores (the coordinator's host, where its replicas run).
std::chrono::microseconds barrier_spin(const run_plan& plan);

/// The context of `plan` on `data`. Computes the initial weights with LibTorch's global
/// generator: call it from one thread, before any worker starts.
context_ptr make_worker_context(run_plan plan, dataset_ptr data,
                                std::shared_ptr<trusted_nodes> trusted = nullptr);

}  // namespace troupe
