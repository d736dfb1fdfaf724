// The driver's watchdog glue (core/policy/step_watch.hpp holds the rules): a tick on the
// driver's own mailbox checks whether a step completed in time; one that did not ends the run
// naming the workers furthest behind.
#include "actors/run_driver_state.hpp"

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

// "a -> b, b -> a": the ring's links by the places of their ends.
std::string ring_links(const worker_roster& roster) {
  std::string out;
  const auto n = roster.size();
  for (int64_t r = 0; r < n; ++r) {
    const auto from = roster.place(r).empty() ? "worker " + std::to_string(r) : roster.place(r);
    const auto to_rank = (r + 1) % n;
    const auto to =
        roster.place(to_rank).empty() ? "worker " + std::to_string(to_rank) : roster.place(to_rank);
    out += (r > 0 ? ", " : "") + from + " -> " + to;
  }
  return out;
}

std::string describe_stall(driver_pointer self, const step_stall& stall) {
  auto& st = self->state;
  const auto fixed = st.plan->job.cluster.step_timeout_s > 0;
  auto text = fmt_seconds(stall.silent_s) + " without a completed step " +
              (stall.last_step >= 0 ? "since step " + std::to_string(stall.last_step)
                                    : std::string("since the start")) +
              " (the limit: " + fmt_seconds(stall.limit_s) +
              (fixed ? ", cluster.step_timeout_s"
                     : ", derived from the run's step times; cluster.step_timeout_s sets it") +
              ")";
  text += "; furthest behind: ";
  for (std::size_t i = 0; i < stall.behind.size(); ++i)
    text += (i > 0 ? ", " : "") + st.roster->describe(stall.behind[i]);
  text += stall.behind_step >= 0 ? ", last heard of at step " + std::to_string(stall.behind_step)
                                 : ", not heard of since the start";
  const bool all_behind = static_cast<int64_t>(stall.behind.size()) == st.roster->size();
  if (st.plan->gradients == gradient_meeting::ring && all_behind && st.options.host_memory)
    text +=
        "; they wait on each other in the shared-memory sum of this host's nodes, so one of "
        "them holds it up";
  else if (st.plan->gradients == gradient_meeting::ring && all_behind)
    text += "; they wait on each other in the ring all-reduce, so one of its links holds it up: " +
            ring_links(*st.roster);
  return text;
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
  if (const auto stall = st.watch->overdue(st.tracker->elapsed_s()))
    return finish(self, describe_stall(self, *stall));
  schedule_tick(self);
}

}  // namespace troupe
