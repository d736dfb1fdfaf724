// Where a node's replicas will sum their sync gradients, settled with the coordinator before
// any of them starts: the shared-memory segment of this host's nodes, this node's places in
// the socket ring (formed again at every regroup of a run that carries on), or both: the host's
// sum in its memory, then the hosts' sums over a ring of one leader rank per host. The segment goes
// into the context the replicas are started with; the places are there from the job on.
#include "actors/cluster/node_agent_state.hpp"

#include "core/collective/host_reduction.hpp"

#include <caf/all.hpp>

#include <memory>
#include <string>
#include <thread>

namespace troupe {
namespace {

// How long a node waits for a socket ring neighbour's connection (they are all up by then).
constexpr double socket_ring_timeout_s = 10;

// Only the coordinator prepares, and only between the job and the first replica: the error
// to answer otherwise (none: go on). A run that carries on without lost nodes forms its socket
// ring again at every regroup (`reforms`).
caf::error refuse_unless_preparing(agent_actor* self, const std::string& what,
                                   bool reforms = false) {
  const auto& st = self->state;
  if (!sender_trusted(self, st.trusted.get()) || !st.context)
    return caf::make_error(caf::sec::invalid_argument, "no " + what + " before the job");
  if (!st.workers.empty() && !(reforms && st.context->plan->job.cluster.carries_on()))
    return caf::make_error(caf::sec::invalid_argument,
                           "no " + what + " once the replicas have started");
  return {};
}

// The coordinator forms the socket ring (messages/cluster.hpp, ring_places): listen, connect,
// join, each step on every node before the next. `step` runs one on this node's places and
// answers with the places (after listening, with this node's ports), or with the error;
// close_ring_places drops them (the ring then runs over actors).
template <class Step>
caf::result<ring_places> on_ring_places(agent_actor* self, Step&& step) {
  auto& st = self->state;
  if (auto refused = refuse_unless_preparing(self, "socket ring", true))
    return refused;
  if (!st.context->socket_rings)
    return caf::make_error(caf::sec::invalid_argument,
                           "this node's replicas sum no gradients over a ring");
  try {
    return step(*st.context->socket_rings);
  } catch (const std::exception& e) {
    return caf::make_error(caf::sec::runtime_error, e.what());
  }
}

}  // namespace

caf::result<caf::ok_atom> open_segment(agent_actor* self, const host_segment& segment) {
  auto& st = self->state;
  if (auto refused = refuse_unless_preparing(self, "shared memory"))
    return refused;
  const auto& plan = *st.context->plan;
  const auto& ranks = segment.ranks;
  const auto replicas = plan.job.parallelism.replicas;
  for (std::size_t k = 0; k < ranks.size(); ++k)
    if (ranks[k] < 0 || ranks[k] >= replicas || (k > 0 && ranks[k] <= ranks[k - 1]))
      return caf::make_error(caf::sec::invalid_argument,
                             "a shared-memory segment's ranks must ascend within the run's " +
                                 std::to_string(replicas));
  // A probe holds one value: it only has to be found.
  const bool probe = ranks.empty();
  const host_segment_spec spec{segment.name, probe ? 1 : static_cast<int64_t>(ranks.size()),
                               probe ? 1 : plan.model.summed_size(), segment.nonce};
  try {
    auto context = std::make_shared<worker_context>(*st.context);
    context->host = segment.create ? host_reduction::create(spec) : host_reduction::open(spec);
    context->host_ranks = ranks;
    // This host's cores, not the coordinator's (which the plan holds).
    context->host->set_spin(barrier_spin(plan.threads_total, std::thread::hardware_concurrency()));
    st.context = std::move(context);
  } catch (const std::exception& e) {
    return caf::make_error(caf::sec::runtime_error, e.what());
  }
  return caf::ok_atom_v;
}

caf::result<caf::ok_atom> settle_segment(agent_actor* self, bool keep) {
  auto& st = self->state;
  if (auto refused = refuse_unless_preparing(self, "shared memory"))
    return refused;
  if (!st.context->host)
    return caf::ok_atom_v;
  st.context->host->unlink();
  if (!keep) {
    auto context = std::make_shared<worker_context>(*st.context);
    context->host.reset();
    context->host_ranks.clear();
    st.context = std::move(context);
  }
  return caf::ok_atom_v;
}

caf::result<ring_places> open_ring_places(agent_actor* self, ring_places places) {
  return on_ring_places(self, [&](socket_ring_places& p) {
    const auto& faults = self->state.context->plan->job.faults;
    if (faults.refuse_socket_ring)
      throw ring_link_error("refused to listen (faults.refuse_socket_ring)");
    if (faults.refuse_ring_reform && places.epoch > 0)
      throw ring_link_error("refused to listen again (faults.refuse_ring_reform)");
    return p.open(std::move(places), self->state.peer_host);
  });
}

caf::result<ring_places> connect_ring_places(agent_actor* self, const ring_places& places) {
  return on_ring_places(self, [&](socket_ring_places& p) {
    p.connect(places, socket_ring_timeout_s);
    return places;
  });
}

caf::result<ring_places> join_ring_places(agent_actor* self, const ring_places& places) {
  return on_ring_places(self, [&](socket_ring_places& p) {
    const auto& plan = *self->state.context->plan;
    p.join(places, plan.ring, socket_ring_timeout_s);
    return places;
  });
}

caf::result<caf::ok_atom> close_ring_places(agent_actor* self) {
  auto& st = self->state;
  if (auto refused = refuse_unless_preparing(self, "socket ring", true))
    return refused;
  if (st.context->socket_rings)
    st.context->socket_rings->clear();
  return caf::ok_atom_v;
}

}  // namespace troupe
