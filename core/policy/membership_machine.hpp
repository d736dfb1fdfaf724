// A replica run's membership as a pure machine: nodes lost, regroups, waits for replacements
// and joins, fed as events and answered with what to do (membership_actions.hpp), as the step
// strategies are. It decides who is live, when a regroup starts and where the run goes on
// from; the run driver (actors/driver/driver_membership.cpp) only carries the actions out:
// it stops workers, sends the notes, records and logs. No threads, no actors, no tensors.
//
// The protocol it drives (messages/membership.hpp):
//   a. a node is lost: every worker it hosts is given up on and each live rank it hosted
//      leaves (the strategy hears it: sync abandons the step in flight, local SGD averages over
//      the live replicas, async releases whoever waited for it); the driver then calls
//      after_loss();
//   b. sync and local SGD ask for a regroup: no further step is released (local SGD first lets
//      the steps already released complete: the drain), the epoch moves on and every live
//      worker is told the live ranks; each answers with the step it last applied;
//   c. those behind, and the replacements, receive the state of one at the furthest step (the
//      donor) in checked chunks;
//   d. once every live worker holds it (regroup_ready; the driver forms the socket ring again
//      where there is one), complete() says where the run goes on from: the survivors redo the
//      step that was in flight;
//   e. below cluster.min_nodes the survivors regroup but go no further (parked): the run waits
//      for replacements until a deadline, then ends;
//   f. a replacement admitted takes a lost node's ranks; once all its workers are up, the next
//      step boundary's regroup makes it live (async: at once; the server hands it weights).
//
// Thread safety: none; owned by the run driver.
#pragma once

#include "core/policy/membership.hpp"
#include "core/policy/membership_actions.hpp"
#include "core/policy/regroup_round.hpp"

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace troupe {

class membership_machine {
 public:
  /// `one_state`: every live replica holds the same state (sync: one checkpoint part), so all
  /// of them check their digests after a join; `parameter_server`: async, where a replacement
  /// needs no state and becomes live as soon as its workers are up.
  membership_machine(membership members, bool one_state, bool parameter_server);

  const membership& members() const { return members_; }
  /// The epoch workers were last told (the one their messages must carry).
  int64_t announced_epoch() const { return announced_epoch_; }
  int64_t completed_through() const { return completed_through_; }
  /// Whether steps may be released: no regroup under way or wanted, not parked below min_nodes.
  bool may_release() const { return !regroup_wanted_ && !round_ && !parked_at_; }
  /// Below min_nodes, waiting for replacements (nobody starts a step).
  bool waiting() const { return waiting_; }
  /// The step the survivors regrouped at while too few to go on.
  const std::optional<int64_t>& parked_at() const { return parked_at_; }
  /// The regroup under way, if any.
  const std::optional<regroup_round>& round() const { return round_; }
  /// Whether `rank` is a replacement's worker that is up but not live yet (it holds no state).
  bool is_joining(int64_t rank) const { return joining_.count(rank) > 0; }
  /// Whether a replacement's worker for `rank` was asked for and has not started yet.
  bool is_spawning(int64_t rank) const { return spawning_.count(rank) > 0; }
  /// "node b", or "worker 3" inside one process.
  std::string label(int64_t rank) const;

  /// The node hosting `rank` is lost. `tell_leave`: it may still be connected (the watchdog
  /// named it) and must be told to leave. The driver carries the actions out, the strategy's
  /// answers to each worker_left included, then calls after_loss().
  member_actions lose_node(int64_t rank, bool tell_leave);
  /// Whether a node's live ranks left and after_loss() is due.
  bool loss_pending() const { return loss_pending_; }
  /// After a loss's actions: below min_nodes the wait begins; a regroup the lost node would
  /// have had to answer starts again without it.
  member_actions after_loss();
  /// The strategy asked for a regroup. `drain`: let the steps released so far complete first
  /// (`released_through`: the last of them).
  member_actions want_regroup(bool drain, int64_t released_through);
  /// Step `step` completed: a drain may be over.
  member_actions step_completed(int64_t step);

  /// A live worker's answer to the regroup of `epoch`: the step it last applied, and whether it
  /// holds the run's state.
  member_actions on_answer(int64_t epoch, int64_t rank, int64_t applied, bool has_state);
  /// The donor handed over its state after `step` (the driver passes it on when told to).
  member_actions on_handover(int64_t epoch, int64_t rank, int64_t step);
  /// A recipient holds the state after `step`.
  member_actions on_taken(int64_t epoch, int64_t rank, int64_t step);
  /// The regroup's state is everywhere (and the ring formed again, where there is one): where
  /// the run goes on from. The driver carries out resume (the strategy resumes) and then calls
  /// after_resume().
  member_actions complete();
  /// After a resume: replacements whose workers are all up regroup in at the next boundary.
  member_actions after_resume(int64_t released_through);
  /// The wait for replacements named `wait_id` is over.
  member_actions on_wait_deadline(int64_t wait_id) const;

  /// A replacement named `name` takes the earliest lost node still vacant: its ranks (ascending)
  /// whose workers are to be started, or none when no node is vacant.
  std::vector<int64_t> admit(const std::string& name);
  /// A replacement's worker for `rank` started; reject_worker first when it is not wanted (its
  /// node was lost meanwhile).
  member_actions worker_started(int64_t rank, int64_t released_through);

 private:
  member_actions start_regroup();
  void maybe_start_regroup(member_actions& out);
  void begin_waiting(member_actions& out);
  void record_joins(int64_t first_step, member_actions& out);
  std::vector<int64_t> digest_ranks(const regroup_plan& plan) const;

  membership members_;
  bool one_state_;
  bool parameter_server_;
  /// The strategy asked for a regroup; with `drain_through`, once that step completed.
  bool regroup_wanted_ = false;
  std::optional<int64_t> drain_through_;
  bool abandons_step_ = false;  ///< the regroup drops the step in flight (sync after a loss)
  std::optional<regroup_round> round_;
  /// The epoch of a round that a loss voided (its lost node would never answer).
  std::optional<int64_t> voided_epoch_;
  bool loss_pending_ = false;   ///< lose_node() said a node left; after_loss() is due
  std::set<int64_t> joining_;   ///< replacements' ranks up, waiting for a step boundary
  std::set<int64_t> spawning_;  ///< replacements' ranks asked for, not started yet
  int64_t completed_through_ = -1;
  int64_t announced_epoch_ = 0;
  bool waiting_ = false;
  int64_t wait_id_ = 0;
  std::optional<int64_t> parked_at_;
};

}  // namespace troupe
