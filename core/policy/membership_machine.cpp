#include "core/policy/membership_machine.hpp"

#include <algorithm>
#include <map>
#include <utility>

namespace troupe {

membership_machine::membership_machine(membership members, bool one_state, bool parameter_server)
    : members_(std::move(members)), one_state_(one_state), parameter_server_(parameter_server) {}

std::string membership_machine::label(int64_t rank) const {
  const auto& name = members_.name_of(members_.node_of(rank));
  return name.empty() ? "worker " + std::to_string(rank) : "node " + name;
}

member_actions membership_machine::lose_node(int64_t rank, bool tell_leave) {
  member_actions out;
  const auto node = members_.node_of(rank);
  const auto lost = members_.lose_node_of(rank);
  const auto hosted = members_.ranks_of_node(node);
  for (auto r : hosted) {
    joining_.erase(r);
    spawning_.erase(r);
  }
  out.push_back(mact::give_up{hosted, tell_leave});
  if (lost.empty()) {  // a replacement lost before it joined: nothing it held was the run's
    out.push_back(mact::lost_before_join{rank});
    if (round_)
      for (auto& a : start_regroup())
        out.push_back(std::move(a));
    return out;
  }
  // The regroup under way waits for an answer the lost node will never send.
  voided_epoch_ = round_ ? std::optional<int64_t>(round_->epoch()) : std::nullopt;
  loss_pending_ = true;
  out.push_back(mact::node_lost{node, lost, completed_through_ + 1, members_.live_nodes()});
  for (auto r : lost)
    out.push_back(mact::worker_left{r});
  return out;
}

member_actions membership_machine::after_loss() {
  member_actions out;
  if (!loss_pending_)
    return out;
  loss_pending_ = false;
  begin_waiting(out);
  // Started again without the lost node, unless the strategy's own regroup waits to start.
  if (voided_epoch_ && round_ && round_->epoch() == *voided_epoch_ && !regroup_wanted_)
    for (auto& a : start_regroup())
      out.push_back(std::move(a));
  voided_epoch_.reset();
  return out;
}

member_actions membership_machine::want_regroup(bool drain, int64_t released_through) {
  member_actions out{mact::hold_release{}};
  if (drain && !abandons_step_ && !parked_at_) {
    drain_through_ = std::max(drain_through_.value_or(released_through), released_through);
  } else {
    drain_through_.reset();
    abandons_step_ = abandons_step_ || !drain;
  }
  regroup_wanted_ = true;
  maybe_start_regroup(out);
  return out;
}

member_actions membership_machine::step_completed(int64_t step) {
  member_actions out;
  completed_through_ = std::max(completed_through_, step);
  maybe_start_regroup(out);
  return out;
}

void membership_machine::maybe_start_regroup(member_actions& out) {
  if (!regroup_wanted_ || (drain_through_ && completed_through_ < *drain_through_))
    return;
  for (auto& a : start_regroup())
    out.push_back(std::move(a));
}

member_actions membership_machine::start_regroup() {
  regroup_wanted_ = false;
  drain_through_.reset();
  // Every replacement whose workers are all up becomes live with this regroup.
  for (int64_t node = 0; node < members_.nodes(); ++node) {
    const auto ranks = members_.ranks_of_node(node);
    if (ranks.empty() || !members_.is_joining(ranks.front()))
      continue;
    if (std::all_of(ranks.begin(), ranks.end(), [&](int64_t r) { return is_joining(r); }))
      members_.activate_node(node);
  }
  members_.bump();
  announced_epoch_ = members_.epoch();
  round_.emplace(announced_epoch_, members_.live(), 1);
  return {mact::announce{announced_epoch_, members_.live()}};
}

void membership_machine::begin_waiting(member_actions& out) {
  if (waiting_ || !members_.below_min())
    return;
  waiting_ = true;
  out.push_back(mact::wait_for_nodes{++wait_id_});
}

member_actions membership_machine::on_answer(int64_t epoch, int64_t rank, int64_t applied,
                                             bool has_state) {
  if (!round_ || epoch != round_->epoch())
    return {mact::drop{}};  // the answer to a regroup that another one overtook
  const auto r = round_->on_answer(rank, applied, has_state && !is_joining(rank));
  if (!r.violation.empty())
    return {mact::end_run{"the run could not carry on after losing a node: " + r.violation}};
  if (!r.plan)
    return {};
  if (r.plan->recipients.empty())
    return {mact::regroup_ready{}};
  return {mact::ask_handover{r.plan->donor, epoch}};
}

member_actions membership_machine::on_handover(int64_t epoch, int64_t rank, int64_t step) {
  if (!round_ || epoch != round_->epoch() || !round_->plan() || rank != round_->plan()->donor)
    return {};  // not the regroup's donor (a state for a checkpoint, or an overtaken one)
  const auto& plan = *round_->plan();
  if (step != plan.target)
    return {mact::end_run{"worker " + std::to_string(rank) + " handed over its state after step " +
                              std::to_string(step) + ", asked was step " +
                              std::to_string(plan.target),
                          true}};
  return {mact::pass_state{plan.recipients, epoch, step}};
}

member_actions membership_machine::on_taken(int64_t epoch, int64_t rank, int64_t step) {
  if (!round_ || epoch != round_->epoch())
    return {mact::drop{}};
  const auto r = round_->on_taken(rank, step);
  if (!r.violation.empty())
    return {mact::end_run{r.violation, true}};
  if (round_->done())
    return {mact::regroup_ready{}};
  return {};
}

void membership_machine::record_joins(int64_t first_step, member_actions& out) {
  std::map<int64_t, std::vector<int64_t>> by_node;
  for (auto r : joining_)
    if (members_.is_live(r))
      by_node[members_.node_of(r)].push_back(r);
  for (auto& [node, ranks] : by_node) {
    for (auto r : ranks)
      joining_.erase(r);
    out.push_back(mact::node_joined{node, ranks, first_step, members_.epoch()});
  }
}

// After a join: the replicas that must hold the same weights (every live one where they hold
// one state, else the donor and those it handed its state to).
std::vector<int64_t> membership_machine::digest_ranks(const regroup_plan& plan) const {
  std::vector<int64_t> ranks;
  if (one_state_) {
    ranks = members_.live();
  } else if (plan.donor >= 0) {
    ranks = plan.recipients;
    ranks.push_back(plan.donor);
    std::sort(ranks.begin(), ranks.end());
  }
  return ranks.size() < 2 ? std::vector<int64_t>{} : ranks;
}

member_actions membership_machine::complete() {
  member_actions out;
  if (!round_ || !round_->plan())
    return out;
  const auto plan = *round_->plan();
  round_.reset();
  const auto target = plan.target;
  record_joins(target + 1, out);  // out holds the joins only, so far
  if (!out.empty() && target >= 0) {
    auto ranks = digest_ranks(plan);
    if (!ranks.empty())
      out.push_back(mact::ask_digests{members_.epoch(), target, std::move(ranks)});
  }
  if (members_.below_min()) {
    parked_at_ = target;  // the survivors agree where they are; the run waits for nodes
    out.push_back(mact::park{target});
    return out;
  }
  parked_at_.reset();
  waiting_ = false;
  out.push_back(mact::resume{target, members_.live(), members_.epoch(), abandons_step_});
  abandons_step_ = false;
  return out;
}

member_actions membership_machine::after_resume(int64_t released_through) {
  if (members_.has_joining() && spawning_.empty() && !joining_.empty())
    return want_regroup(true, released_through);
  return {};
}

member_actions membership_machine::on_wait_deadline(int64_t wait_id) const {
  if (!waiting_ || wait_id != wait_id_ || !members_.below_min())
    return {};
  return {mact::give_up_waiting{parked_at_.value_or(-1), members_.live()}};
}

std::vector<int64_t> membership_machine::admit(const std::string& name) {
  const auto slot = members_.admit(name);
  if (slot < 0)
    return {};
  auto ranks = members_.ranks_of_node(slot);
  spawning_.insert(ranks.begin(), ranks.end());
  return ranks;
}

member_actions membership_machine::worker_started(int64_t rank, int64_t released_through) {
  if (spawning_.erase(rank) == 0)
    return {mact::reject_worker{rank}};
  joining_.insert(rank);
  const auto node = members_.node_of(rank);
  const auto hosted = members_.ranks_of_node(node);
  if (!std::all_of(hosted.begin(), hosted.end(), [&](int64_t r) { return is_joining(r); }))
    return {};  // more of its workers to come
  if (!parameter_server_) {
    if (round_)
      return {};  // the regroup under way calls the next one for it (after_resume)
    return want_regroup(!parked_at_, released_through);
  }
  // async: the parameter server hands it weights; it needs no state of its own.
  member_actions out;
  members_.activate_node(node);
  members_.bump();
  record_joins(completed_through_ + 1, out);
  for (auto r : hosted)
    out.push_back(mact::worker_joined{r});
  if (!members_.below_min()) {
    waiting_ = false;
    parked_at_.reset();
    out.push_back(mact::end_wait{});
  }
  return out;
}

}  // namespace troupe
