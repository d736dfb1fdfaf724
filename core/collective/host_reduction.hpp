// Sync replicas in different processes of one host (troupe nodes started side by side, as
// `troupe run --local-nodes` does) summing their gradients through a POSIX shared-memory
// segment instead of sending them over loopback TCP.
//
// The segment holds a header (its identity, a barrier) and one slot of `numel` floats per rank.
// Per step, rank r copies its gradient into slot r; after a barrier it sums slice r
// (core/collective/replica_reduction.hpp's slices) of every slot in rank order, slot 0 + slot 1
// + ..., and writes the sum into slice r of every slot; after a second barrier it copies its own
// slot back. The result is element for element what sum_in_order gives, so a run over nodes on
// one host ends bit for bit where the same run in one process does, for any number of ranks.
// Each rank moves about 2 + 2(R - 1)/R buffers of memory per step, none through the kernel.
// A segment may hold only some of a run's ranks (one host's, with other hosts' in segments of
// their own): then its leader sums the hosts' sums over the network and `broadcast`s the total.
//
// Who shares memory is not guessed from host names: the coordinator asks one node to create a
// segment with a random name and nonce, and every other node to open it and find that nonce;
// if any cannot, the run uses the ring over the network instead (actors/cluster/run_cluster). Once
// all have it open the creator removes the name, so nothing is left in /dev/shm after the run.
//
// A rank waiting at a barrier spins briefly (see step_barrier), then sleeps on a futex in the
// segment in slices of a few milliseconds, checking between them whether the reduction was
// aborted (here or by another rank: a failed replica, the node told the run ended) and whether
// every rank's process still exists. Those checks stop a rank from waiting for ever for a
// process that died.
//
// Thread safety: one object per process, for all of the process's ranks; all_reduce(r) from
// rank r's thread, abort from any thread.
#pragma once

#include "core/collective/ring_plan.hpp"
#include "core/collective/step_barrier.hpp"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace troupe {

/// What identifies a segment: its name in /dev/shm ("/troupe-..."), the ranks and buffer size it
/// was made for, and a random nonce that an opener must find in it.
struct host_segment_spec {
  std::string name;
  int64_t ranks = 0;
  int64_t numel = 0;
  uint64_t nonce = 0;
};

class host_reduction {
 public:
  /// Creates the segment (it must not exist yet). Throws std::runtime_error naming the segment
  /// and the system's reason when it cannot.
  static std::unique_ptr<host_reduction> create(const host_segment_spec& spec);
  /// Opens a segment another process created. Throws std::runtime_error when it does not exist
  /// here (another host, another /dev/shm) or holds another spec or nonce.
  static std::unique_ptr<host_reduction> open(const host_segment_spec& spec);
  ~host_reduction();
  host_reduction(const host_reduction&) = delete;
  host_reduction& operator=(const host_reduction&) = delete;

  /// Removes the segment's name (the mappings stay). Idempotent; the creator's destructor does
  /// it too.
  void unlink();

  /// `spin`: how long a waiter spins (at most: step_barrier.hpp's spin_budget) before sleeping;
  /// zero when the ranks' threads outnumber the cores. Call before the first all_reduce.
  void set_spin(std::chrono::microseconds spin);

  /// Rank `rank`'s slot, [numel] float32 in the segment, valid as long as this object. A rank
  /// whose gradient lives there (flat_parameters::move_grads_into) is summed with no copy into
  /// the segment and none back.
  at::Tensor slot_tensor(int64_t rank) const;

  /// Sums `buffer` (rank `rank`'s contiguous float32 gradient of numel elements, or its slot)
  /// with every other rank's, in place. Every rank calls it once per step. Throws barrier_aborted
  /// when the reduction was aborted or a rank's process is gone, std::invalid_argument for a bad
  /// buffer or rank.
  void all_reduce(int64_t rank, const at::Tensor& buffer);

  /// Gives every rank `root`'s `buffer`: the second half of a hierarchical sum, where `root`
  /// (the host's leader) summed the hosts' sums over the network. Every rank calls it with the
  /// same root; `buffer` as for all_reduce (the root's is read, the others' written). Returns
  /// once every rank has read the root's slot, so that no rank's next all_reduce overwrites it
  /// first. Throws as all_reduce does.
  void broadcast(int64_t rank, const at::Tensor& buffer, int64_t root);

  /// Releases every rank waiting, in every process, with barrier_aborted; later calls throw.
  void abort(const std::string& why);

  const host_segment_spec& spec() const { return spec_; }

 private:
  host_reduction(host_segment_spec spec, void* base, std::size_t bytes, bool creator);
  void wait_for_all(int64_t rank);
  /// Checks `rank` and `buffer` (all_reduce's rules) and records this process as rank's.
  at::Tensor enter(int64_t rank, const at::Tensor& buffer);
  [[noreturn]] void throw_aborted();
  float* slot(int64_t rank) const;

  host_segment_spec spec_;
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  bool creator_ = false;
  bool unlinked_ = false;
  std::vector<chunk_range> slices_;
  std::vector<spin_budget> budgets_;  ///< one per rank; this process's ranks use theirs
  std::atomic<bool> aborted_{false};
  std::mutex why_mutex_;
  std::string why_;  ///< why this process aborted; guarded by why_mutex_
};

/// A name for a new segment: "/troupe-<pid>-<16 random hex digits>".
std::string new_segment_name();
/// A random nonce (never 0).
uint64_t new_segment_nonce();

}  // namespace troupe
