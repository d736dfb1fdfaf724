// The run driver's roster: each rank's worker handle, where it runs, and how to name it in a
// message. Workers are numbered replica-major: worker r * stages + s is stage s of replica r
// (one stage: worker r is replica r).
//
// Thread safety: none; owned by the run driver.
#pragma once

#include <caf/actor.hpp>
#include <caf/actor_addr.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

class worker_roster {
 public:
  /// `places[r]` says where worker r runs ("node a"); empty inside one process.
  worker_roster(int64_t workers, int64_t stages, std::vector<std::string> places);

  int64_t size() const { return static_cast<int64_t>(workers_.size()); }
  bool contains(int64_t rank) const { return rank >= 0 && rank < size(); }
  /// Whether every rank has its worker.
  bool complete() const { return joined_ == size(); }

  void set(int64_t rank, caf::actor worker);
  /// Rank `rank` has no worker any more (its node was lost; a replacement may take it).
  void clear(int64_t rank) { workers_.at(static_cast<std::size_t>(rank)) = caf::actor(); }
  /// Rank `rank` runs at `place` from now on (a replacement node).
  void set_place(int64_t rank, std::string place);
  const caf::actor& at(int64_t rank) const { return workers_.at(static_cast<std::size_t>(rank)); }
  const std::vector<caf::actor>& all() const { return workers_; }
  /// The rank of the worker at `address`, or -1.
  int64_t rank_of(const caf::actor_addr& address) const;

  /// "worker 3", "worker 1 (node b)", or for pipelines "stage 1 of replica 1 (worker 3)".
  std::string describe(int64_t rank) const;
  /// Where worker `rank` runs ("node a"), or "" inside one process.
  std::string place(int64_t rank) const;

 private:
  int64_t stages_;
  std::vector<caf::actor> workers_;
  std::vector<std::string> places_;
  int64_t joined_ = 0;
};

}  // namespace troupe
