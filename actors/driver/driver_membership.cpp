// The run driver when a node is lost and the run carries on (cluster.on_node_loss "continue"),
// and when a replacement joins. The rules are pure (core/policy/membership, regroup_round and
// the strategies' on_worker_left/resume); this is the glue. The protocol (messages/
// membership.hpp):
//   a. a node is lost (its connection dropped, heartbeats stopped, or the step watchdog named
//      it): every worker it hosts is given up on (its later messages and down messages are
//      ignored, a node still connected is told to leave), a node_lost record is written, and
//      the strategy hears that each rank left: sync abandons the step in flight, local SGD
//      averages over the live replicas, async releases whoever waited for it;
//   b. sync and local SGD then ask for a regroup: the driver releases no further step (local
//      SGD first lets the steps already released complete), moves the membership epoch on and
//      tells every live worker the live ranks and its ring successor; each drops the step under
//      way and answers with the step it last applied;
//   c. those one step behind (a ring that completed for some survivors and not others) and the
//      replacements receive the state of one at the furthest step, in checked chunks;
//   d. where sync gradients go round the socket ring, it is formed again among the live ranks
//      (driver_ring_forming.cpp); then the strategy resumes with the live ranks after that
//      step: the survivors redo the step that was in flight, each on its share of the same
//      global batch (step_redone);
//   e. below cluster.min_nodes the survivors regroup but go no further: the run waits for
//      replacements for cluster.replacement_timeout_s, then ends with a checkpoint, naming the
//      nodes missing;
//   f. a replacement that joined (the gatekeeper hands it over) is introduced to the live nodes
//      (trust, direct links), its workers start (driver_replacements.cpp), and at the next step
//      boundary a regroup makes it live and hands it the state (node_joined).
#include "actors/driver/run_driver_state.hpp"
#include "core/checkpoint/state_transfer.hpp"
#include "core/run/run_ending.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <caf/all.hpp>

#include <chrono>

namespace troupe {
namespace {

using namespace std::chrono_literals;

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

caf::timespan seconds(double s) {
  return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(s));
}

void start_regroup(driver_pointer self);

void maybe_start_regroup(driver_pointer self) {
  auto& m = mstate(self);
  if (self->state.finished || !m.regroup_wanted)
    return;
  if (m.drain_through && m.completed_through < *m.drain_through)
    return;
  start_regroup(self);
}

// Every replacement whose workers are all up becomes live now.
std::vector<int64_t> activate_ready(membership_state& m) {
  std::vector<int64_t> joined;
  for (int64_t node = 0; node < m.members.nodes(); ++node) {
    const auto ranks = m.members.ranks_of_node(node);
    if (ranks.empty() || !m.members.is_joining(ranks.front()))
      continue;
    bool up = true;
    for (auto r : ranks)
      up = up && m.joining.count(r) > 0;
    if (!up)
      continue;
    for (auto r : m.members.activate_node(node))
      joined.push_back(r);
  }
  return joined;
}

void start_regroup(driver_pointer self) {
  auto& st = self->state;
  auto& m = mstate(self);
  m.regroup_wanted = false;
  m.drain_through.reset();
  m.digest_check.reset();  // a check of the old membership: who left will not answer
  activate_ready(m);
  m.members.bump();
  const auto epoch = m.members.epoch();
  const auto& live = m.members.live();
  for (auto& h : st.held)
    h = {};
  st.average_base = at::Tensor();  // the workers forget theirs with the membership note
  st.reduce_s = 0;
  m.round.emplace(epoch, live, 1);
  m.announced_epoch = epoch;
  m.state_bytes = 0;
  for (auto r : live)
    tell(self, st.roster->at(r), membership_atom_v, membership_note{epoch, live},
         st.roster->at(m.members.successor(r)));
  if (st.watch)
    st.watch->start(st.tracker->elapsed_s());
}

// Pending checkpoints of steps the survivors have passed whose parts will never all come.
void drop_orphaned_checkpoints(driver_pointer self, int64_t target) {
  auto& st = self->state;
  for (auto it = st.pending_checkpoints.begin(); it != st.pending_checkpoints.end();) {
    if (it->first > target) {
      ++it;
      continue;
    }
    st.tracker->record(records::checkpoint{
        it->first, 0, 0, "abandoned: a node was lost before its state was handed in", 0});
    it = st.pending_checkpoints.erase(it);
  }
}

// After a join, at the step boundary `target`: the replicas that must hold the same weights
// (every live one under sync, else the donor and those it handed its state to) report a digest
// of them. Sent before the next step is released, so each answers before it computes on.
void ask_for_digests(driver_pointer self, const regroup_plan& plan) {
  auto& st = self->state;
  auto& m = mstate(self);
  std::vector<int64_t> ranks;
  if (st.plan->checkpoint_parts() == 1) {
    ranks = m.members.live();
  } else if (plan.donor >= 0) {
    ranks = plan.recipients;
    ranks.push_back(plan.donor);
  }
  if (ranks.size() < 2)
    return;
  m.digest_check.emplace(m.members.epoch(), plan.target, ranks);
  for (auto r : m.digest_check->ranks())
    tell(self, st.roster->at(r), digest_atom_v, m.members.epoch());
}

// Below min_nodes: the run waits for replacements until the deadline.
void begin_waiting(driver_pointer self) {
  auto& st = self->state;
  auto& m = mstate(self);
  if (m.waiting_since || !m.members.below_min())
    return;
  m.waiting_since = st.tracker->elapsed_s();
  ++m.wait_id;
  const auto& c = st.plan->job.cluster;
  log_line(st, fmt::format("{} of {} node(s) live, fewer than cluster.min_nodes ({}): waiting up "
                           "to {} s for replacements of {}",
                           m.members.live_nodes(), m.members.nodes(), c.min_nodes,
                           c.replacement_timeout_s, fmt::join(m.members.missing(), ", ")));
  self->delayed_send(self, seconds(c.replacement_timeout_s), deadline_atom_v, m.wait_id);
}

}  // namespace

// "node b", or "worker 3" inside one process.
std::string node_label(const run_driver_state& st, int64_t rank) {
  const auto& m = st.members->members;
  const auto& name = m.name_of(m.node_of(rank));
  return name.empty() ? "worker " + std::to_string(rank) : "node " + name;
}

void complete_regroup(driver_pointer self) {
  auto& st = self->state;
  auto& m = mstate(self);
  const auto plan = *m.round->plan();
  m.round.reset();
  const auto target = plan.target;
  const auto& live = m.members.live();
  if (record_joins(self, target + 1) && target >= 0)
    ask_for_digests(self, plan);
  if (m.members.below_min()) {
    m.parked_at = target;  // the survivors agree where they are; the run waits for nodes
    return;
  }
  m.parked_at.reset();
  m.waiting_since.reset();
  st.tracker->failures().regrouped(target + 1);
  if (m.abandons_step && target + 1 < st.plan->rules.total_steps())
    st.tracker->record(records::step_redone{target + 1, m.members.epoch(), 0});
  m.abandons_step = false;
  // An evaluation a lost worker left incomplete: those of steps the survivors have passed are
  // recorded as they are; the one of the step they stand at is done again over the live ones.
  bool evaluate_again = false;
  for (auto s : st.tracker->open_eval_rounds())
    st.tracker->close_eval_round(s, s == target);
  if (target >= 0 && st.plan->rules.evaluates_after(target) && !st.tracker->evaluated(target))
    evaluate_again = true;
  drop_orphaned_checkpoints(self, target);
  if (evaluate_again)  // before the next step: the workers hold the weights after `target`
    for (auto r : live)
      tell(self, st.roster->at(r), evaluate_atom_v, target);
  if (st.watch)
    st.watch->regrouped(live, target, st.tracker->elapsed_s());
  execute(self, st.strategy->resume(live, target));
  if (st.finished)
    return;
  if (m.members.has_joining() && m.spawning.empty() && !m.joining.empty())
    want_regroup(self, act::regroup{live, true});
  maybe_succeed(self);
}

void log_line(const run_driver_state& st, const std::string& line) {
  if (st.options.run.cluster && st.options.run.cluster->log)
    st.options.run.cluster->log(line);
}

void flush_deferred(driver_pointer self) {
  auto& m = mstate(self);
  auto deferred = std::move(m.deferred_hand_outs);
  m.deferred_hand_outs.clear();
  step_actions actions(deferred.begin(), deferred.end());
  execute(self, std::move(actions));
}

bool record_joins(driver_pointer self, int64_t first_step) {
  auto& st = self->state;
  auto& m = mstate(self);
  std::map<int64_t, std::vector<int64_t>> by_node;
  for (auto r : m.joining)
    if (m.members.is_live(r))
      by_node[m.members.node_of(r)].push_back(r);
  for (auto& [node, ranks] : by_node) {
    for (auto r : ranks)
      m.joining.erase(r);
    const auto name = m.members.name_of(node);
    st.tracker->record(
        records::node_joined{name, ranks, first_step, m.state_bytes, m.members.epoch(), 0});
    st.tracker->failures().joined({name, ranks, first_step, st.tracker->elapsed_s()});
    log_line(st, fmt::format("node {} joined the run at step {} (workers {})", name, first_step,
                             fmt::join(ranks, ", ")));
  }
  return !by_node.empty();
}

bool carries_on(const run_driver_state& st) {
  return st.members && st.plan->job.cluster.carries_on();
}

std::vector<int64_t> live_ranks(const run_driver_state& st) {
  if (st.members)
    return st.members->members.live();
  std::vector<int64_t> all;
  for (int64_t r = 0; r < st.roster->size(); ++r)
    all.push_back(r);
  return all;
}

bool may_release(const run_driver_state& st) {
  if (!st.members)
    return true;
  const auto& m = *st.members;
  return !m.regroup_wanted && !m.round && !m.parked_at;
}

void begin_membership(driver_pointer self) {
  auto& st = self->state;
  if (st.plan->mode != run_mode::replicas)
    return;
  const auto& o = st.options;
  if (!o.node_of.empty()) {
    std::vector<std::string> names;
    for (const auto& n : o.nodes)
      names.push_back(n.name);
    st.members.emplace(membership(o.node_of, std::move(names), st.plan->job.cluster.min_nodes));
  } else {
    st.members.emplace(membership::single_process(st.plan->workers));
  }
  st.members->last_heard.assign(static_cast<std::size_t>(st.plan->workers), 0.0);
}

bool from_current_worker(driver_pointer self, int64_t rank) {
  auto& st = self->state;
  const auto& sender = self->current_sender();
  if (!sender)
    return false;
  const auto address = caf::actor_cast<caf::actor_addr>(sender);
  if (st.server && address == st.server.address())
    return true;
  const auto& w = st.roster->at(rank);
  if (w && w.address() == address) {
    if (st.members)
      st.members->last_heard[static_cast<std::size_t>(rank)] = st.tracker->elapsed_s();
    return true;
  }
  if (st.members)
    ++st.members->dropped;
  return false;
}

void lose_node(driver_pointer self, int64_t rank, const std::string& why, bool by_watch) {
  auto& st = self->state;
  auto& m = mstate(self);
  const auto now = st.tracker->elapsed_s();
  const auto node = m.members.node_of(rank);
  const auto label = node_label(st, rank);
  const auto lost = m.members.lose_node_of(rank);
  double last_heard = 0;
  for (auto r : m.members.ranks_of_node(node)) {
    const auto& w = st.roster->at(r);
    if (w) {
      m.departed.insert(w.address());
      self->send_exit(w, caf::exit_reason::kill);
      st.roster->clear(r);
    }
    st.held[static_cast<std::size_t>(r)] = {};
    m.joining.erase(r);
    m.spawning.erase(r);
    m.checkpoint_handovers.erase(r);
    if (st.watch)
      st.watch->forget(r);
    last_heard = std::max(last_heard, m.last_heard[static_cast<std::size_t>(r)]);
  }
  // A node still connected (the watchdog gave up on it) must not wait for ever either.
  if (by_watch && static_cast<std::size_t>(rank) < st.options.node_agents.size())
    tell(self, st.options.node_agents[static_cast<std::size_t>(rank)], leave_atom_v,
         "the run went on without this node: " + why);
  if (lost.empty()) {  // a replacement lost before it joined: nothing it held was the run's
    log_line(st, label + " was lost before it joined: " + why);
    if (m.round)
      start_regroup(self);
    return;
  }
  const bool round_under_way = m.round.has_value();
  const double detection = std::max(0.0, now - last_heard);
  const auto in_flight = m.completed_through + 1;
  st.tracker->record(records::node_lost{label.substr(label.find(' ') + 1), lost, why, in_flight,
                                        detection, m.members.live_nodes(), unix_now(), 0});
  st.tracker->failures().lost(
      {label.substr(label.find(' ') + 1), lost, why, in_flight, now, detection, std::nullopt});
  log_line(st, fmt::format("{} lost at step {} ({}); {} node(s) carry on", label, in_flight, why,
                           m.members.live_nodes()));
  for (auto r : lost) {
    if (st.finished)
      return;
    auto actions = st.strategy->on_worker_left(r);
    for (const auto& a : actions)
      if (std::holds_alternative<act::cannot_continue>(a))
        return finish(
            self, st.roster->describe(r) + " failed: " + why + "; no worker of the run is left");
    execute(self, std::move(actions));
  }
  if (st.finished)
    return;
  if (st.plan->parameter_server())
    st.tracker->failures().recover_at_next_step();
  begin_waiting(self);
  // A regroup that was under way starts again without the lost node: it would never answer.
  if (round_under_way && m.round && !m.regroup_wanted)
    start_regroup(self);
}

void want_regroup(driver_pointer self, const act::regroup& a) {
  auto& st = self->state;
  auto& m = mstate(self);
  if (st.release)
    st.release->hold();
  if (a.drain && !m.abandons_step && !m.parked_at) {
    const auto released = st.release ? st.release->next() - 1 : m.completed_through;
    m.drain_through = std::max(m.drain_through.value_or(released), released);
  } else {
    m.drain_through.reset();
    m.abandons_step = m.abandons_step || !a.drain;
  }
  m.regroup_wanted = true;
  maybe_start_regroup(self);
}

void membership_step_complete(driver_pointer self, int64_t step) {
  if (!self->state.members)
    return;
  auto& m = mstate(self);
  m.completed_through = std::max(m.completed_through, step);
  maybe_start_regroup(self);
}

}  // namespace troupe
