// A regroup of a run that carries on without lost nodes (cluster.on_node_loss "continue") whose
// nodes sum sync gradients over the socket ring: the old ring is broken (a node left) or lacks a
// member (one joined), so it is formed again among the live ranks, with the new epoch and a
// fresh secret, in the three steps of the ring formed before the run (messages/cluster.hpp):
// every node hosting a live rank listens, then connects, then joins, each step sent to all of
// them at once. The regroup completes once the ring is formed. Where it cannot be (a node
// refuses, fails or stays silent), every node drops its places, the log says why, and the
// replicas sum over actors in this epoch. A node lost meanwhile starts another regroup, whose
// epoch leaves this forming's late answers unread.
#include "actors/driver/run_driver_state.hpp"
#include "actors/exchange/socket_ring_places.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <caf/all.hpp>

#include <chrono>
#include <map>
#include <memory>

namespace troupe {
namespace {

using namespace std::chrono_literals;

struct ring_forming {
  int64_t epoch = 0;
  std::vector<caf::actor> agents;  ///< each node taking part
  std::vector<std::string> names;
  std::vector<std::string> hosts;
  std::vector<ring_places> places;  ///< each node's
  std::size_t pending = 0;          ///< answers still to come in this step
  std::string error;                ///< the step's first failure
};

using forming_ptr = std::shared_ptr<ring_forming>;

// Whether `f` still belongs to the regroup under way.
bool current(driver_pointer self, const forming_ptr& f) {
  const auto& st = self->state;
  if (st.finished || !st.members)
    return false;
  const auto& round = st.members->machine.round();
  return round && round->epoch() == f->epoch;
}

// Every node drops its places (answers awaited, so that no replica takes a ring another one
// lacks), then the regroup completes over actors.
void give_up(driver_pointer self, const forming_ptr& f) {
  log_line(self->state, fmt::format("the {} could not be formed again ({}): the ring "
                                    "runs over actors in epoch {}",
                                    collective_name(self->state.plan->job.cluster.collective),
                                    f->error, f->epoch));
  f->pending = f->agents.size();
  const auto closed = [self, f] {
    if (--f->pending == 0 && current(self, f))
      complete_regroup(self);
  };
  for (const auto& agent : f->agents)
    self->request(agent, 10s, ring_atom_v, caf::close_atom_v)
        .then([closed](caf::ok_atom) { closed(); }, [closed](caf::error&) { closed(); });
}

// Sends every node one step (`xs...` and its places); `next` once all answered with their
// places, else give_up.
template <class Next, class... Ts>
void forming_step(driver_pointer self, const forming_ptr& f, Next next, Ts... xs) {
  f->pending = f->agents.size();
  const auto answered = [self, f, next] {
    if (--f->pending > 0 || !current(self, f))
      return;
    if (f->error.empty())
      next();
    else
      give_up(self, f);
  };
  for (std::size_t i = 0; i < f->agents.size(); ++i)
    self->request(f->agents[i], 30s, ring_atom_v, xs..., f->places[i])
        .then(
            [f, i, answered](ring_places& answer) {
              const auto problem = ring_answer_problem(f->places[i], answer);
              if (problem.empty())
                f->places[i] = std::move(answer);
              else if (f->error.empty())
                f->error = "node " + f->names[i] + " " + problem;
              answered();
            },
            [self, f, i, answered](caf::error& e) {
              if (f->error.empty())
                f->error = "node " + f->names[i] + ": " + self->system().render(e);
              answered();
            });
}

}  // namespace

void form_ring_then_complete(driver_pointer self) {
  auto& st = self->state;
  const auto& machine = mstate(self).machine;
  if (!st.options.socket_ring)
    return complete_regroup(self);
  auto f = std::make_shared<ring_forming>();
  f->epoch = machine.round()->epoch();
  const auto& live = machine.members().live();
  std::map<int64_t, std::size_t> index_of_node;  // node slot -> index among those taking part
  std::vector<std::size_t> node_of_member;
  for (auto r : live) {
    const auto node = machine.members().node_of(r);
    auto [it, added] = index_of_node.emplace(node, f->agents.size());
    if (added) {
      const auto& slot = st.options.nodes.at(static_cast<std::size_t>(node));
      f->agents.push_back(st.options.node_agents.at(static_cast<std::size_t>(r)));
      f->names.push_back(slot.name);
      f->hosts.push_back(slot.peer_host);
    }
    node_of_member.push_back(it->second);
  }
  f->places = plan_ring_places(f->epoch, live, node_of_member, f->agents.size());
  const auto formed = [self, f] {
    log_line(self->state, fmt::format("{} formed again among workers {} (epoch {})",
                                      collective_name(self->state.plan->job.cluster.collective),
                                      fmt::join(f->places.front().members, ", "), f->epoch));
    complete_regroup(self);
  };
  const auto join = [self, f, formed] { forming_step(self, f, formed, caf::join_atom_v); };
  const auto connect = [self, f, join] {
    link_ring_places(f->places, f->hosts);
    forming_step(self, f, join, caf::connect_atom_v);
  };
  forming_step(self, f, connect, caf::open_atom_v);
}

}  // namespace troupe
