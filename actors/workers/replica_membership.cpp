// A replica worker when the membership changes (messages/membership.hpp): a regroup's note,
// the state it hands over or takes over, the digest of its weights after a join, and an
// evaluation done again over the live replicas.
#include "actors/workers/evaluation_report.hpp"
#include "actors/workers/replica_worker_state.hpp"
#include "core/run/replica_digests.hpp"
#include "messages/error_code.hpp"

#include <caf/all.hpp>

#include <algorithm>
#include <string>

namespace troupe::replica_internal {

// A regroup (messages/membership.hpp): the live replicas of a new epoch. This one takes its
// position's share of every batch and its place in the ring, drops the step under way (under
// sync it waits for a sum that will never come), and says which step it last applied.
void on_membership(self_pointer self, const membership_note& note, const caf::actor& successor) {
  auto& st = self->state;
  st.average_base = at::Tensor();  // the driver forgets its base too: hand in whole
  const auto it = std::find(note.live.begin(), note.live.end(), st.rank);
  if (it == note.live.end())
    return self->quit(protocol_violation("worker " + std::to_string(st.rank) +
                                         " is not among the live workers of epoch " +
                                         std::to_string(note.epoch)));
  ensure_engine(st);
  st.epoch = note.epoch;
  st.position = it - note.live.begin();
  st.live = static_cast<int64_t>(note.live.size());
  if (st.plan->parameter_server() == false)
    st.engine->set_share(st.position, st.live);
  st.reducer.reset();
  st.ring.reset();
  st.socket.reset();  // a sum under way is aborted; the new epoch's ring is formed afresh
  if (st.plan->gradients == gradient_meeting::ring)
    ring_of(st).link(caf::actor_cast<replica_worker_actor>(successor));
  st.incoming.reset();
  st.pace.regroup();
  tell_driver(self, membership_atom_v, regroup_answer{st.epoch, st.rank, st.pace.next() - 1, true});
}

// The driver asks for this worker's state now, to hand it to others.
void hand_over(self_pointer self, int64_t epoch) {
  auto& st = self->state;
  if (epoch != st.epoch)
    return;  // a regroup that was overtaken by another
  ensure_engine(st);
  tell_driver(self, handover_atom_v,
              handed_state{epoch, st.rank, st.pace.next() - 1, cpu_copy(*st.engine),
                           st.engine->optimizer_state()});
}

// After a join the driver checks that the replicas agree: a digest of this worker's weights,
// at the step boundary (before the next step, which the driver releases after asking).
void report_digest(self_pointer self, int64_t epoch) {
  auto& st = self->state;
  if (epoch != st.epoch)
    return;  // a check that a regroup overtook
  ensure_engine(st);
  tell_driver(
      self, digest_atom_v,
      digest_report{epoch, st.rank, st.pace.next() - 1, weights_digest(st.engine->weights())});
}

// A chunk of the state this worker takes over; once all are in and check out, it adopts it.
void on_state_chunk(self_pointer self, const state_chunk& c) {
  auto& st = self->state;
  if (c.epoch != st.epoch)
    return;
  ensure_engine(st);
  if (!st.incoming || c.index == 0) {
    // Weights and Adam's two moments, serialized, with room for the optimizer's framing.
    const auto values = st.engine->weights().numel();
    st.incoming.emplace(values, 4 * values * static_cast<int64_t>(sizeof(float)) + (16 << 20));
  }
  auto problem = st.incoming->add(c.index, c.count, c.chunk_bytes, c.weight_bytes, c.total_bytes,
                                  c.digest, c.bytes);
  if (problem.empty() && !st.incoming->complete())
    return;
  at::Tensor weights;
  std::string optimizer;
  if (problem.empty())
    problem = st.incoming->take(weights, optimizer);
  st.incoming.reset();
  if (!problem.empty())
    return self->quit(protocol_violation("worker " + std::to_string(st.rank) +
                                         " refused the state it was handed: " + problem));
  st.engine->restore(weights, optimizer);
  st.pace.start_at(c.step + 1);
  tell_driver(self, taken_atom_v, state_taken{st.epoch, st.rank, c.step});
}

// The evaluation after `step` again, over the live replicas' new shares (a lost worker's shard
// never came). The worker holds the weights after `step`: a regroup just brought it there.
void evaluate_again(self_pointer self, int64_t step) {
  auto& st = self->state;
  ensure_engine(st);
  const auto start = clock_type::now();
  auto figures = st.engine->evaluate();  // before the clock is read (replica_worker.cpp)
  tell_driver(self,
              evaluation_report(st.rank, step, std::move(figures), seconds_since(start), st.live));
  if (st.position == 0 && st.plan->snapshots())
    tell_driver(self, snapshot_atom_v, evaluated_weights{step, 0, cpu_copy(*st.engine)});
}

}  // namespace troupe::replica_internal
