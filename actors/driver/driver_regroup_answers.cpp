// The run driver's side of a regroup's answers (messages/membership.hpp; the protocol is the
// membership machine's, core/policy/membership_machine.hpp): the workers' answers, the donor's
// state handed on in chunks, the states taken, the digests checked after a join, and the end
// of a wait for replacements below cluster.min_nodes.
#include "actors/driver/run_driver_state.hpp"
#include "core/checkpoint/state_transfer.hpp"

#include <fmt/format.h>
#include <caf/all.hpp>

namespace troupe {
namespace {

// The checkpoint part a rank's state stands for: under sync one part (any live replica's),
// otherwise its own.
int64_t part_of_rank(const run_driver_state& st, int64_t rank) {
  return st.plan->checkpoint_parts() == 1 ? 0 : rank;
}

// "worker 2 (node c)", or "worker 2" inside one process.
std::string worker_label(const run_driver_state& st, int64_t rank) {
  const auto where = st.members->machine.label(rank);
  return where.rfind("worker ", 0) == 0 ? where : fmt::format("worker {} ({})", rank, where);
}

// The donor's state, packed in checked chunks, to every recipient.
void pass_state(driver_pointer self, const mact::pass_state& a, const at::Tensor& weights,
                const std::string& optimizer) {
  auto& st = self->state;
  const auto packed = pack_state(weights, optimizer);
  mstate(self).state_bytes = packed.total_bytes;
  const auto count = static_cast<int64_t>(packed.chunks.size());
  for (auto to : a.recipients)
    for (int64_t i = 0; i < count; ++i)
      tell(self, st.roster->at(to), state_atom_v,
           state_chunk{a.epoch, a.step, i, count, packed.chunk_bytes, packed.weight_bytes,
                       packed.total_bytes, packed.digest,
                       packed.chunks[static_cast<std::size_t>(i)]});
}

}  // namespace

void on_regroup_answer(driver_pointer self, int64_t epoch, int64_t rank, int64_t applied,
                       bool has_state) {
  execute_membership(self, mstate(self).machine.on_answer(epoch, rank, applied, has_state));
}

void on_handover(driver_pointer self, int64_t epoch, int64_t rank, int64_t step,
                 const at::Tensor& weights, const std::string& optimizer) {
  auto& st = self->state;
  auto& m = mstate(self);
  if (m.checkpoint_handovers.erase(rank) > 0 && epoch == m.machine.members().epoch())
    take_checkpoint_part(self, step, part_of_rank(st, rank), weights, optimizer);
  if (st.finished)
    return;
  auto actions = m.machine.on_handover(epoch, rank, step);
  for (const auto& a : actions)
    if (const auto* pass = std::get_if<mact::pass_state>(&a))
      pass_state(self, *pass, weights, optimizer);
  execute_membership(self, std::move(actions));
}

void on_state_taken(driver_pointer self, int64_t epoch, int64_t rank, int64_t step) {
  execute_membership(self, mstate(self).machine.on_taken(epoch, rank, step));
}

void on_weights_digest(driver_pointer self, int64_t epoch, int64_t rank, int64_t step,
                       const std::string& digest) {
  auto& st = self->state;
  auto& m = mstate(self);
  if (st.finished || !m.digest_check || epoch != m.digest_check->epoch()) {
    ++m.dropped;  // the answer to a check that a regroup overtook
    return;
  }
  if (!m.digest_check->add(rank, step, digest))
    return fail_protocol(self,
                         "an unasked-for digest of worker " + std::to_string(rank) + "'s weights");
  if (!m.digest_check->complete())
    return;
  const auto check = std::move(*m.digest_check);
  m.digest_check.reset();
  const auto problem = check.disagreement([&](int64_t r) { return worker_label(st, r); });
  if (!problem.empty())
    return finish(self, "the replicas disagree after a node joined: " + problem);
  st.tracker->record(
      records::replicas_checked{check.ranks(), check.step(), check.epoch(), check.digest(), 0});
  log_line(st,
           fmt::format("workers {} hold identical weights after step {} (SHA-256 {})",
                       fmt::join(check.ranks(), ", "), check.step(), check.digest().substr(0, 16)));
}

void on_wait_deadline(driver_pointer self, int64_t id) {
  if (!self->state.finished)
    execute_membership(self, mstate(self).machine.on_wait_deadline(id));
}

void give_up_waiting(driver_pointer self, const mact::give_up_waiting& a) {
  auto& st = self->state;
  auto& m = mstate(self);
  const auto& members = m.machine.members();
  const auto& c = st.plan->job.cluster;
  auto reason = fmt::format(
      "{} of {} node(s) live, fewer than cluster.min_nodes ({}), and no replacement came within "
      "{} s (cluster.replacement_timeout_s); missing: {}",
      members.live_nodes(), members.nodes(), c.min_nodes, c.replacement_timeout_s,
      fmt::join(members.missing(), ", "));
  // A checkpoint needs the survivors to agree where they are, and that step's evaluation (a
  // lost node may have taken its shard along): otherwise the last checkpoint written stands.
  const auto step = a.parked_at;
  if (!st.writer || step < 0 ||
      (st.plan->rules.evaluates_after(step) && !st.tracker->evaluated(step)))
    return finish(self, reason);
  // The survivors stand at parked_at: its checkpoint first, then the run ends.
  st.end_reason = reason + fmt::format("; the checkpoint after step {} lets it go on", step);
  st.stop_at = step;
  auto& pending = st.pending_checkpoints[step];
  pending.parts.clear();
  pending.tracker = st.tracker->save();
  if (st.plan->checkpoint_parts() == 1)
    m.checkpoint_handovers = {a.live.front()};
  else
    m.checkpoint_handovers = std::set<int64_t>(a.live.begin(), a.live.end());
  for (auto r : m.checkpoint_handovers)
    tell(self, st.roster->at(r), handover_atom_v, members.epoch());
}

}  // namespace troupe
