// Sync replicas of one process summing their gradients among themselves, in shared memory:
// no coordinator thread, no messages, no copies of whole buffers.
//
// Each replica attaches its flat gradient buffer once. Every step, once its backward pass is
// done, each calls all_reduce(rank): after a barrier (every gradient complete), rank r sums
// slice r of all the buffers in rank order, g0 + g1 + ... (element for element what
// core/collective/sum_in_order computes, so the result is bit for bit the driver's), and writes
// the sum into slice r of every buffer; after a second barrier every buffer holds the whole sum
// and each replica applies it with its own optimizer, as before. Slice r of any buffer is only
// touched by rank r between the barriers, and nobody touches another's buffer outside them, so
// the next step's backward may start as soon as the second barrier opens.
//
// The work is split R ways and runs on the replicas' own threads, where the driver used to sum
// whole buffers on one thread and message the result back (two thread wake-ups per replica per
// step).
//
// The driver counts a step when every replica's report of it is in. A replica that fails in
// step s knows every replica has summed step s - 1, but a slower one may not have sent its report
// of s - 1 yet: the failing one waits (reported / await_reports, bounded) until they have, so that
// the driver, which reads its mailbox in order, counts step s - 1 before it learns of the failure.
//
// Thread safety: attach(), all_reduce(r) and reported(r, ...) from rank r's thread; abort() and
// await_reports() from any thread.
#pragma once

#include "core/collective/ring_plan.hpp"
#include "core/collective/step_barrier.hpp"

#include <ATen/core/Tensor.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

class replica_reduction {
 public:
  /// `ranks` buffers of `numel` float32 elements each. `spin`: see step_barrier (zero when the
  /// replicas' threads outnumber the cores).
  replica_reduction(int64_t ranks, int64_t numel, std::chrono::microseconds spin);

  /// Rank `rank`'s flat float32 gradient buffer of `numel` elements. Once per rank, before any
  /// rank calls all_reduce. Throws std::invalid_argument otherwise.
  void attach(int64_t rank, at::Tensor buffer);

  /// Returns when every attached buffer holds the sum of all of them. Every rank must call it
  /// once per step. Throws barrier_aborted after abort().
  void all_reduce(int64_t rank);

  /// Releases every rank waiting in all_reduce, now and later, with barrier_aborted(why).
  void abort(const std::string& why);

  /// Rank `rank` has sent the driver its report of `step` (steps only grow).
  void reported(int64_t rank, int64_t step);
  /// The last step rank `rank` reported; -1 before its first.
  int64_t last_reported(int64_t rank) const;
  /// Waits until every rank has reported `step` or later, or `limit` has passed (a rank that
  /// died or stalls). True when all had.
  bool await_reports(int64_t step, std::chrono::milliseconds limit) const;

  int64_t ranks() const { return ranks_; }

 private:
  const int64_t ranks_;
  const int64_t numel_;
  std::vector<at::Tensor> buffers_;
  std::vector<chunk_range> slices_;  ///< rank r reduces slices_[r]
  step_barrier barrier_;
  std::vector<std::atomic<int64_t>> reported_;  ///< per rank: the last step reported, or -1
};

/// The slices of `numel` elements that `ranks` ranks reduce: as even as possible, each
/// beginning on a multiple of 16 elements (64 bytes: ranks never write the same cache line).
std::vector<chunk_range> reduction_slices(int64_t numel, int64_t ranks);

}  // namespace troupe
