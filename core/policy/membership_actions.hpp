// What the membership machine (membership_machine.hpp) asks the run driver to do, in order.
// Plain values: ranks, steps and epochs; the driver holds the workers, tensors and records.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

namespace troupe {
namespace mact {

/// Give up on the workers of a lost node: ignore whatever they still send, stop them, forget
/// what they sent. `tell_leave`: the node may still be connected; tell it to leave.
struct give_up {
  std::vector<int64_t> ranks;
  bool tell_leave = false;
};
/// A replacement was lost before it became live: nothing it held was the run's.
struct lost_before_join {
  int64_t rank = 0;
};
/// The live ranks `ranks` of node slot `node` left while step `in_flight` was under way;
/// `live_nodes` carry on (a node_lost record).
struct node_lost {
  int64_t node = 0;
  std::vector<int64_t> ranks;
  int64_t in_flight = 0;
  int64_t live_nodes = 0;
};
/// The strategy hears that `rank` left.
struct worker_left {
  int64_t rank = 0;
};
/// Fewer live nodes than min_nodes: wait for replacements until the deadline named `wait_id`.
struct wait_for_nodes {
  int64_t wait_id = 0;
};
/// Release no further step.
struct hold_release {};
/// A regroup starts in `epoch`: tell every live rank the live ranks and its ring successor;
/// what workers sent under the old membership is forgotten, a digest check too.
struct announce {
  int64_t epoch = 0;
  std::vector<int64_t> live;
};
/// Ask `donor` for its state, to be handed on in `epoch`.
struct ask_handover {
  int64_t donor = 0;
  int64_t epoch = 0;
};
/// Pass the donor's state after `step` on to `recipients`.
struct pass_state {
  std::vector<int64_t> recipients;
  int64_t epoch = 0;
  int64_t step = 0;
};
/// Every live worker holds the state: form the socket ring again where the run has one, then
/// call complete().
struct regroup_ready {};
/// A replacement's ranks became live in `epoch`; they compute from `first_step` (a record).
struct node_joined {
  int64_t node = 0;
  std::vector<int64_t> ranks;
  int64_t first_step = 0;
  int64_t epoch = 0;
};
/// After a join: these replicas must hold identical weights after `step`; ask each a digest.
struct ask_digests {
  int64_t epoch = 0;
  int64_t step = 0;
  std::vector<int64_t> ranks;
};
/// Too few nodes: the survivors agree they stand after `target` and go no further for now.
struct park {
  int64_t target = -1;
};
/// The run goes on after `target` with the `live` ranks (the strategy resumes); `redo`: the
/// step after target was abandoned in flight and is done again (a step_redone record).
struct resume {
  int64_t target = -1;
  std::vector<int64_t> live;
  int64_t epoch = 0;
  bool redo = false;
};
/// async: the replacement's `rank` joins now (the strategy hears it).
struct worker_joined {
  int64_t rank = 0;
};
/// Enough nodes again: hand out what waited for them.
struct end_wait {};
/// Stop a replacement's worker that is no longer wanted.
struct reject_worker {
  int64_t rank = 0;
};
/// The run cannot carry on: ends with `reason` (`protocol`: a worker broke the protocol).
struct end_run {
  std::string reason;
  bool protocol = false;
};
/// No replacement came in time: the run ends. Where the survivors are parked after a step
/// (parked_at >= 0), a checkpoint of it may come first, from `live`.
struct give_up_waiting {
  int64_t parked_at = -1;
  std::vector<int64_t> live;
};
/// A message of an overtaken epoch or regroup: counted, then dropped.
struct drop {};

}  // namespace mact

using member_action =
    std::variant<mact::give_up, mact::lost_before_join, mact::node_lost, mact::worker_left,
                 mact::wait_for_nodes, mact::hold_release, mact::announce, mact::ask_handover,
                 mact::pass_state, mact::regroup_ready, mact::node_joined, mact::ask_digests,
                 mact::park, mact::resume, mact::worker_joined, mact::end_wait, mact::reject_worker,
                 mact::end_run, mact::give_up_waiting, mact::drop>;
using member_actions = std::vector<member_action>;

}  // namespace troupe
