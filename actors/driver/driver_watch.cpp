// The driver's watchdog glue (core/policy/step_watch.hpp and step_blame.hpp hold the rules): a
// tick on the driver's own mailbox checks whether a step completed in time. Once none did, the
// replicas are probed, and what holds the step up (a worker behind, one that does not answer,
// one ring link) is named: the run ends with that, or under cluster.on_node_loss "continue"
// goes on without that node.
#include "actors/driver/run_driver_state.hpp"
#include "core/policy/step_blame.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace troupe {
namespace {

// Often enough to end a stall soon after its limit, rarely enough to cost nothing.
std::chrono::milliseconds tick_of(double limit_s) {
  const auto ms = std::clamp(limit_s * 1000 / 4, 50.0, 1000.0);
  return std::chrono::milliseconds(static_cast<int64_t>(ms));
}

void schedule_tick(driver_pointer self) {
  self->delayed_send(self, tick_of(self->state.watch->limit_s()), watch_atom_v);
}

std::string where(const worker_roster& roster, int64_t rank) {
  return roster.place(rank).empty() ? "worker " + std::to_string(rank) : roster.place(rank);
}

// "N s without a completed step since step S (the limit: ...)".
std::string describe_silence(driver_pointer self, const step_stall& stall) {
  auto& st = self->state;
  const auto fixed = st.plan->job.cluster.step_timeout_s > 0;
  return fmt_seconds(stall.silent_s) + " without a completed step " +
         (stall.last_step >= 0 ? "since step " + std::to_string(stall.last_step)
                               : std::string("since the start")) +
         " (the limit: " + fmt_seconds(stall.limit_s) +
         (fixed ? ", cluster.step_timeout_s"
                : ", derived from the run's step times; cluster.step_timeout_s sets it") +
         ")";
}

// What holds the step up, in words (core/policy/step_blame.hpp decided).
std::string describe_blame(driver_pointer self, const step_stall& stall, const step_blame& b) {
  auto& st = self->state;
  const auto& roster = *st.roster;
  switch (b.what) {
    case step_blame::kind::behind:
      return "furthest behind: " + roster.describe(b.rank) +
             (b.step >= 0 ? ", last heard of at step " + std::to_string(b.step)
                          : std::string(", not heard of since the start"));
    case step_blame::kind::silent:
      return "furthest behind: " + roster.describe(b.rank) +
             ", which did not answer the watchdog's probe (stopped, or stuck in a step)";
    case step_blame::kind::ring_link:
      return "the workers wait on each other in the ring all-reduce of step " +
             std::to_string(b.step) + ", and " + roster.describe(b.link_to) +
             " received the fewest chunks: the link " + where(roster, b.rank) + " -> " +
             where(roster, b.link_to) + " holds it up";
    case step_blame::kind::missing:
      return "furthest behind: " + roster.describe(b.rank) + ", whose gradient never came";
    case step_blame::kind::none:
      break;
  }
  std::string text = "furthest behind: ";
  for (std::size_t i = 0; i < stall.behind.size(); ++i)
    text += (i > 0 ? ", " : "") + roster.describe(stall.behind[i]);
  const bool all_behind = static_cast<int64_t>(stall.behind.size()) == roster.size();
  if (st.plan->gradients == gradient_meeting::ring && all_behind && st.options.host_memory)
    text +=
        "; they wait on each other in the shared-memory sum of this host's nodes, so one of "
        "them holds it up";
  return text;
}

// How long the workers have to answer a probe: soon enough to act near the limit.
double probe_wait_s(double limit_s) {
  return std::clamp(limit_s / 4, 0.1, 1.0);
}

// The stall is decided: who holds it up is named; the run ends with that, or, carrying on
// when a node is lost, goes on without it.
void act_on_stall(driver_pointer self, const step_stall& stall) {
  auto& st = self->state;
  std::map<int64_t, probe_answer> probes;
  for (const auto& [rank, p] : st.probes)
    probes[rank] = {p.step, p.busy, p.in_ring, p.received};
  std::set<int64_t> sent;
  for (std::size_t r = 0; r < st.held.size(); ++r)
    if (st.held[r].tensor.defined())
      sent.insert(static_cast<int64_t>(r));
  auto live = live_ranks(st);
  // Without probes (pipelines, or a test's fakes that do not answer) every worker seems silent:
  // only the workers behind can be named then.
  const bool probed = st.members && !st.probes.empty();
  auto blame = blame_for(stall, live, probes, st.plan->gradients == gradient_meeting::ring, sent);
  if (!probed && blame.what != step_blame::kind::behind)
    blame = step_blame{};
  st.probes.clear();
  st.probed_at.reset();
  const auto text = describe_silence(self, stall) + "; " + describe_blame(self, stall, blame);
  if (!carries_on(st) || blame.rank < 0)
    return finish(self, text);
  lose_node(self, blame.rank, text, true);
  if (!st.finished)
    schedule_tick(self);
}

}  // namespace

std::string fmt_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, s < 10 ? "%.1f s" : "%.0f s", s);
  return buf;
}

void begin_watch(driver_pointer self) {
  auto& st = self->state;
  const auto& cluster = st.plan->job.cluster;
  if (cluster.step_timeout_s <= 0 && !cluster.enabled())
    return;  // in one process no message is lost: only an explicit limit applies
  st.watch.emplace(st.plan->workers, cluster.step_timeout_s);
  st.watch->start(st.tracker->elapsed_s());
  schedule_tick(self);
}

void watch_heard(driver_pointer self, int64_t rank, int64_t step) {
  auto& st = self->state;
  if (st.watch)
    st.watch->heard(rank, step);
}

void watch_completed(driver_pointer self, int64_t step) {
  auto& st = self->state;
  if (st.watch)
    st.watch->completed(step, st.tracker->elapsed_s());
}

void check_progress(driver_pointer self) {
  auto& st = self->state;
  // After the last step only the final evaluation and weights remain: the workers' own
  // failures end those.
  if (!st.watch || st.finished || st.training_done)
    return;
  const auto now = st.tracker->elapsed_s();
  if (st.members && st.members->machine.waiting()) {
    st.watch->start(now);  // waiting for replacements has its own deadline
    return schedule_tick(self);
  }
  const auto stall = st.watch->overdue(now);
  if (!stall) {
    st.probed_at.reset();
    st.probes.clear();
    return schedule_tick(self);
  }
  // Before naming anyone, ask the replicas what they do (a probe's answer says who waits on
  // whom inside a ring); a worker that does not answer in time is the one that holds it up.
  if (st.members && !st.probed_at) {
    st.probed_at = now;
    st.probes.clear();
    for (auto r : live_ranks(st))
      tell(self, st.roster->at(r), probe_atom_v);
    self->delayed_send(
        self, std::chrono::milliseconds(static_cast<int64_t>(probe_wait_s(stall->limit_s) * 1000)),
        watch_atom_v);
    return;
  }
  if (st.probed_at && now - *st.probed_at < probe_wait_s(stall->limit_s))
    return schedule_tick(self);
  act_on_stall(self, *stall);
}

}  // namespace troupe
