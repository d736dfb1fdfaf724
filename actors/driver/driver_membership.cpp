// The run driver when a node is lost and the run carries on (cluster.on_node_loss "continue"),
// and when a replacement joins. Every decision (who is live, when a regroup starts, where the
// run goes on from) is the membership machine's (core/policy/membership_machine.hpp, which
// describes the protocol); this file carries out its actions: it stops workers, sends the
// membership notes, records and logs.
#include "actors/driver/run_driver_state.hpp"

#include <ATen/ATen.h>
#include <fmt/format.h>
#include <caf/all.hpp>

#include <chrono>

namespace troupe {
namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

caf::timespan seconds(double s) {
  return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(s));
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

// The run goes on after `a.target`: an evaluation a lost worker left incomplete is recorded
// as it is (or done again at the step the survivors stand at), then the strategy resumes.
void resume_run(driver_pointer self, const mact::resume& a) {
  auto& st = self->state;
  const auto target = a.target;
  st.tracker->failures().regrouped(target + 1);
  if (a.redo && target + 1 < st.plan->rules.total_steps())
    st.tracker->record(records::step_redone{target + 1, a.epoch, 0});
  for (auto s : st.tracker->open_eval_rounds())
    st.tracker->close_eval_round(s, s == target);
  const bool evaluate_again =
      target >= 0 && st.plan->rules.evaluates_after(target) && !st.tracker->evaluated(target);
  drop_orphaned_checkpoints(self, target);
  if (evaluate_again)  // before the next step: the workers hold the weights after `target`
    for (auto r : a.live)
      tell(self, st.roster->at(r), evaluate_atom_v, target);
  if (st.watch)
    st.watch->regrouped(a.live, target, st.tracker->elapsed_s());
  execute(self, st.strategy->resume(a.live, target));
  if (st.finished)
    return;
  execute_membership(self, mstate(self).machine.after_resume(released_through(st)));
  if (!st.finished)
    maybe_succeed(self);
}

// Carries out one membership action; `why` is the reason of the loss being handled, if any.
struct membership_executor {
  driver_pointer self;
  const std::string& why;

  run_driver_state& st() const { return self->state; }
  membership_state& m() const { return mstate(self); }
  const membership& members() const { return m().machine.members(); }

  void operator()(const mact::give_up& a) const {
    for (auto r : a.ranks) {
      const auto& w = st().roster->at(r);
      if (w) {
        m().departed.insert(w.address());
        self->send_exit(w, caf::exit_reason::kill);
        st().roster->clear(r);
      }
      st().held[static_cast<std::size_t>(r)] = {};
      m().checkpoint_handovers.erase(r);
      if (st().watch)
        st().watch->forget(r);
    }
    // A node still connected (the watchdog gave up on it) must not wait for ever either.
    const auto agent = static_cast<std::size_t>(a.ranks.front());
    if (a.tell_leave && agent < st().options.node_agents.size())
      tell(self, st().options.node_agents[agent], leave_atom_v,
           "the run went on without this node: " + why);
  }
  void operator()(const mact::lost_before_join& a) const {
    log_line(st(), m().machine.label(a.rank) + " was lost before it joined: " + why);
  }
  void operator()(const mact::node_lost& a) const {
    const auto now = st().tracker->elapsed_s();
    double last_heard = 0;
    for (auto r : members().ranks_of_node(a.node))
      last_heard = std::max(last_heard, m().last_heard[static_cast<std::size_t>(r)]);
    const double detection = std::max(0.0, now - last_heard);
    const auto label = m().machine.label(a.ranks.front());
    const auto name = label.substr(label.find(' ') + 1);
    st().tracker->record(records::node_lost{name, a.ranks, why, a.in_flight, detection,
                                            a.live_nodes, unix_now(), 0});
    st().tracker->failures().lost({name, a.ranks, why, a.in_flight, now, detection, std::nullopt});
    log_line(st(), fmt::format("{} lost at step {} ({}); {} node(s) carry on", label, a.in_flight,
                               why, a.live_nodes));
  }
  void operator()(const mact::worker_left& a) const {
    auto actions = st().strategy->on_worker_left(a.rank);
    for (const auto& x : actions)
      if (std::holds_alternative<act::cannot_continue>(x))
        return finish(self, st().roster->describe(a.rank) + " failed: " + why +
                                "; no worker of the run is left");
    execute(self, std::move(actions));
  }
  void operator()(const mact::wait_for_nodes& a) const {
    const auto& c = st().plan->job.cluster;
    log_line(st(), fmt::format("{} of {} node(s) live, fewer than cluster.min_nodes ({}): "
                               "waiting up to {} s for replacements of {}",
                               members().live_nodes(), members().nodes(), c.min_nodes,
                               c.replacement_timeout_s, fmt::join(members().missing(), ", ")));
    self->delayed_send(self, seconds(c.replacement_timeout_s), deadline_atom_v, a.wait_id);
  }
  void operator()(const mact::hold_release&) const {
    if (st().release)
      st().release->hold();
  }
  void operator()(const mact::announce& a) const {
    m().digest_check.reset();  // a check of the old membership: who left will not answer
    for (auto& h : st().held)
      h = {};
    st().average_base = at::Tensor();  // the workers forget theirs with the membership note
    st().reduce_s = 0;
    m().state_bytes = 0;
    for (auto r : a.live)
      tell(self, st().roster->at(r), membership_atom_v, membership_note{a.epoch, a.live},
           st().roster->at(members().successor(r)));
    if (st().watch)
      st().watch->start(st().tracker->elapsed_s());
  }
  void operator()(const mact::ask_handover& a) const {
    tell(self, st().roster->at(a.donor), handover_atom_v, a.epoch);
  }
  void operator()(const mact::pass_state&) const {}  // on_handover passes the tensors on
  void operator()(const mact::regroup_ready&) const { form_ring_then_complete(self); }
  void operator()(const mact::node_joined& a) const {
    const auto& name = members().name_of(a.node);
    st().tracker->record(
        records::node_joined{name, a.ranks, a.first_step, m().state_bytes, a.epoch, 0});
    st().tracker->failures().joined({name, a.ranks, a.first_step, st().tracker->elapsed_s()});
    log_line(st(), fmt::format("node {} joined the run at step {} (workers {})", name, a.first_step,
                               fmt::join(a.ranks, ", ")));
  }
  // Sent before the next step is released, so each answers before it computes on.
  void operator()(const mact::ask_digests& a) const {
    m().digest_check.emplace(a.epoch, a.step, a.ranks);
    for (auto r : a.ranks)
      tell(self, st().roster->at(r), digest_atom_v, a.epoch);
  }
  // Too few to go on: the steps the survivors stand past are complete (and counted) before the
  // run waits, and before a checkpoint of where they stand, should none come.
  void operator()(const mact::park& a) const {
    execute(self, st().strategy->close_through(a.target));
  }
  void operator()(const mact::resume& a) const { resume_run(self, a); }
  void operator()(const mact::worker_joined& a) const {
    execute(self, st().strategy->on_worker_joined(a.rank, st().tracker->elapsed_s()));
  }
  void operator()(const mact::end_wait&) const {
    auto deferred = std::move(m().deferred_hand_outs);
    m().deferred_hand_outs.clear();
    execute(self, step_actions(deferred.begin(), deferred.end()));
  }
  void operator()(const mact::reject_worker&) const {}  // replacement_started stops it
  void operator()(const mact::end_run& a) const {
    if (a.protocol)
      fail_protocol(self, a.reason);
    else
      finish(self, a.reason);
  }
  void operator()(const mact::give_up_waiting& a) const { give_up_waiting(self, a); }
  void operator()(const mact::drop&) const { ++m().dropped; }
};

}  // namespace

void execute_membership(driver_pointer self, member_actions actions, const std::string& loss_why) {
  const membership_executor run{self, loss_why};
  for (const auto& a : actions) {
    if (self->state.finished)
      return;
    std::visit(run, a);
  }
}

void complete_regroup(driver_pointer self) {
  execute_membership(self, mstate(self).machine.complete());
}

void log_line(const run_driver_state& st, const std::string& line) {
  if (st.options.run.cluster && st.options.run.cluster->log)
    st.options.run.cluster->log(line);
}

bool carries_on(const run_driver_state& st) {
  return st.members && st.plan->job.cluster.carries_on();
}

std::vector<int64_t> live_ranks(const run_driver_state& st) {
  if (st.members)
    return st.members->machine.members().live();
  std::vector<int64_t> all;
  for (int64_t r = 0; r < st.roster->size(); ++r)
    all.push_back(r);
  return all;
}

int64_t released_through(const run_driver_state& st) {
  return st.release ? st.release->next() - 1 : st.members->machine.completed_through();
}

bool may_release(const run_driver_state& st) {
  return !st.members || st.members->machine.may_release();
}

void begin_membership(driver_pointer self) {
  auto& st = self->state;
  if (st.plan->mode != run_mode::replicas)
    return;
  const auto& o = st.options;
  auto members = membership::single_process(st.plan->workers);
  if (!o.node_of.empty()) {
    std::vector<std::string> names;
    for (const auto& n : o.nodes)
      names.push_back(n.name);
    members = membership(o.node_of, std::move(names), st.plan->job.cluster.min_nodes);
  }
  st.members.emplace(membership_machine(std::move(members), st.plan->checkpoint_parts() == 1,
                                        st.plan->parameter_server()));
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
  auto& machine = mstate(self).machine;
  execute_membership(self, machine.lose_node(rank, by_watch), why);
  if (st.finished)
    return;
  if (st.plan->parameter_server() && machine.loss_pending())
    st.tracker->failures().recover_at_next_step();
  execute_membership(self, machine.after_loss(), why);
}

void want_regroup(driver_pointer self, const act::regroup& a) {
  execute_membership(self,
                     mstate(self).machine.want_regroup(a.drain, released_through(self->state)));
}

void membership_step_complete(driver_pointer self, int64_t step) {
  if (self->state.members)
    execute_membership(self, mstate(self).machine.step_completed(step));
}

}  // namespace troupe
