// Who takes part in a run across processes: which node hosts each rank, which nodes are live,
// which lost ones are being replaced, and the membership epoch every change moves on. The run
// driver owns one (actors/driver/driver_membership.cpp); workers learn each epoch's live ranks from
// it.
//
// A node is lost as a whole: all the ranks it hosts leave together, and a replacement node
// takes over the ranks of one lost node (the one lost first). Between a loss and the next
// regroup the survivors' ranks keep their numbers; what changes is each one's position among
// the live ranks, which decides its share of every global batch (rows_of: core/data/batch_plan
// shard_of over the live ranks in rank order) and its place in the ring all-reduce.
//
// Epochs: 0 at the start; lose() and activate() each move it on. Every message a worker sends
// about a step carries the epoch it was sent in, so that what a worker sent under an old
// membership (a stopped node that comes back) can be told apart and dropped.
//
// Thread safety: none; owned by the run driver.
#pragma once

#include "core/data/batch_plan.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

class membership {
 public:
  /// `node_of[r]`: the node slot hosting rank r (core/cluster/join_check place_replicas);
  /// `names[n]`: slot n's node name ("" inside one process, where each rank is its own slot).
  /// `min_nodes`: below this many live nodes the run waits for replacements.
  membership(std::vector<int64_t> node_of, std::vector<std::string> names, int64_t min_nodes = 1);
  /// Inside one process: each rank is a slot of its own, without a name.
  static membership single_process(int64_t ranks);

  int64_t epoch() const { return epoch_; }
  int64_t ranks() const { return static_cast<int64_t>(node_of_.size()); }
  /// The live ranks, ascending: every step's batch is split over them in this order.
  const std::vector<int64_t>& live() const { return live_; }
  bool is_live(int64_t rank) const { return position(rank) >= 0; }
  /// Index of `rank` among the live ranks, or -1.
  int64_t position(int64_t rank) const;
  /// The live rank after `rank` in the ring (wrapping); `rank` itself when it is alone.
  int64_t successor(int64_t rank) const;
  /// Rows [begin, end) of a global batch of `batch` rows that live rank `rank` takes now.
  row_range rows_of(int64_t rank, int64_t batch) const;

  int64_t node_of(int64_t rank) const { return node_of_.at(static_cast<std::size_t>(rank)); }
  /// The ranks node slot `node` hosts, ascending.
  std::vector<int64_t> ranks_of_node(int64_t node) const;
  const std::string& name_of(int64_t node) const {
    return names_.at(static_cast<std::size_t>(node));
  }
  int64_t nodes() const { return static_cast<int64_t>(names_.size()); }
  int64_t live_nodes() const;
  int64_t min_nodes() const { return min_nodes_; }
  bool below_min() const { return live_nodes() < min_nodes_; }
  /// Names of the lost nodes nobody has replaced yet, in slot order.
  std::vector<std::string> missing() const;
  /// Whether some lost node's ranks are free for a replacement.
  bool has_vacancy() const;

  /// The node hosting `rank` is lost: its live ranks leave and the epoch moves on. Returns them
  /// (empty when that node was not live: already lost, or still joining; see is_joining).
  std::vector<int64_t> lose_node_of(int64_t rank);
  /// Whether `rank`'s node is a replacement that has not become live yet.
  bool is_joining(int64_t rank) const;
  /// A replacement node named `name` takes the ranks of the earliest lost node still vacant
  /// (slot order); returns the slot, or -1 when none is vacant. Its ranks join at activate().
  int64_t admit(const std::string& name);
  /// Every admitted replacement becomes live (at a step boundary); the epoch moves on. Returns
  /// the ranks that joined, ascending.
  std::vector<int64_t> activate();
  /// The same for the replacement in slot `node` only (empty when it is not joining).
  std::vector<int64_t> activate_node(int64_t node);
  /// Moves the epoch on without a change (every regroup starts a fresh one, so that an answer
  /// to an overtaken regroup is never taken for one of the next).
  void bump() { ++epoch_; }
  /// Whether some admitted replacement waits for activate().
  bool has_joining() const;

 private:
  enum class slot_state { live, lost, joining };
  void refresh_live();

  std::vector<int64_t> node_of_;
  std::vector<std::string> names_;
  std::vector<slot_state> slots_;
  std::vector<int64_t> lost_order_;  ///< lost slots, in the order they were lost
  std::vector<int64_t> live_;
  int64_t min_nodes_;
  int64_t epoch_ = 0;
};

}  // namespace troupe
