// A replica worker's side of async's sharded parameter server (actors/workers/sharded_server):
// its gradient goes out in slices, one to each shard, and its weights come back in slices. The
// push goes to the driver only once every shard has acknowledged its slice, so that the
// driver's apply finds the slice at every shard.
#include "actors/workers/replica_worker_state.hpp"
#include "messages/error_code.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <caf/all.hpp>

#include <algorithm>

namespace troupe {
namespace replica_internal {
namespace {

void know_slices(replica_worker_state& st) {
  if (!st.shard_slices.empty())
    return;
  st.shard_slices = server_shards_of(*st.plan);
  const auto count = static_cast<int64_t>(st.shard_slices.size());
  st.gathering.emplace(count);
  const auto compression = st.plan->job.parallelism.compression;
  if (compression != compression_kind::none)
    st.shard_encoders.assign(st.shard_slices.size(), error_feedback(compression));
}

void send_slice(self_pointer self, std::size_t k);

void on_acked(self_pointer self, std::size_t k, int64_t push) {
  auto& st = self->state;
  if (push != st.push_count || !st.pushing || st.acked[k])
    return;
  st.acked[k] = true;
  if (std::find(st.acked.begin(), st.acked.end(), false) != st.acked.end())
    return;
  const auto meta = *st.pushing;
  st.pushing.reset();
  st.push_slices.clear();
  tell_driver(self, push_atom_v, async_push{meta, st.version, at::Tensor()});
}

void send_slice(self_pointer self, std::size_t k) {
  auto& st = self->state;
  const auto shard = caf::actor_cast<server_shard_actor>(st.shards[k]);
  const auto push = st.push_count;
  self->request(shard, caf::infinite, push_atom_v,
                async_push{*st.pushing, st.version, st.push_slices[k]})
      .then([self, k, push](caf::ok_atom) { on_acked(self, k, push); },
            [self, k, push, shard](caf::error& e) {
              auto& st = self->state;
              if (push != st.push_count || !st.pushing)
                return;
              // A shard that refused the slice found it wrong: a fault of this worker's. One
              // that is gone is replaced, and the replacement announced (take_shards) takes it.
              if (e == caf::sec::invalid_argument)
                self->quit(e);
              else if (caf::actor_cast<server_shard_actor>(st.shards[k]) != shard)
                send_slice(self, k);
            });
}

}  // namespace

void push_to_shards(self_pointer self, const gradient_meta& meta) {
  auto& st = self->state;
  know_slices(st);
  st.engine->clip_own_gradient();
  const auto& gradient = st.engine->gradient();
  st.push_slices.clear();
  for (std::size_t k = 0; k < st.shard_slices.size(); ++k) {
    // A copy: the gradient buffer is overwritten by the next step while the slice travels.
    auto slice = gradient.narrow(0, st.shard_slices[k].begin, st.shard_slices[k].size);
    st.push_slices.push_back(st.shard_encoders.empty() ? slice.clone()
                                                       : st.shard_encoders[k].encode(slice));
  }
  ++st.push_count;
  st.pushing = meta;
  st.acked.assign(st.shard_slices.size(), false);
  if (st.shards.empty())
    return;  // the server's list of the shards is on its way: take_shards sends them
  for (std::size_t k = 0; k < st.shards.size(); ++k)
    send_slice(self, k);
}

void take_shards(self_pointer self, const std::vector<caf::actor>& shards) {
  auto& st = self->state;
  know_slices(st);
  if (shards.size() != st.shard_slices.size())
    return self->quit(protocol_violation("a list of " + std::to_string(shards.size()) +
                                         " shards for a server of " +
                                         std::to_string(st.shard_slices.size())));
  const auto before = std::exchange(st.shards, shards);
  if (!st.pushing)
    return;
  for (std::size_t k = 0; k < shards.size(); ++k)
    if (!st.acked[k] && (before.empty() || before[k] != shards[k]))
      send_slice(self, k);
}

void on_shard_slice(self_pointer self, const server_weights& w) {
  auto& st = self->state;
  know_slices(st);
  ensure_engine(st);
  const auto verdict = st.gathering->on_slice(w.version, w.shard);
  if (verdict == slice_gather::verdict::drop)
    return;
  const auto& slice = st.shard_slices[static_cast<std::size_t>(w.shard)];
  {
    torch::NoGradGuard no_grad;
    auto part = st.engine->weights().narrow(0, slice.begin, slice.size);
    if (is_packed(w.weights))
      part.add_(unpack(w.weights).view_as(part));  // the change since the last hand-out
    else
      part.copy_(w.weights.reshape({-1}));
  }
  if (verdict != slice_gather::verdict::take_complete)
    return;
  st.comm_s = w.step > 0 ? seconds_since(st.sent_at) : 0.0;
  st.engine->set_weights(st.engine->weights());  // the buffers take their slots' values
  compute_on(self, w.version, w.step);
}

}  // namespace replica_internal
}  // namespace troupe
