// The run driver when a node joins to replace a lost one (cluster.on_node_loss "continue";
// driver_membership.cpp has the rest of the protocol, step f there): it takes the lost node's
// slot, is introduced to the live nodes (trust both ways, direct links for the ring), its
// workers start, and at the next step boundary a regroup makes them live and hands them the
// state (async: the parameter server hands them weights, at once).
#include "actors/driver/run_driver_state.hpp"

#include <fmt/format.h>
#include <caf/all.hpp>

#include <chrono>
#include <memory>
#include <set>

namespace troupe {

using namespace std::chrono_literals;

namespace {

// A replacement's worker is up: the membership machine says what follows (sync: a regroup at
// the next step boundary; async: it joins at once).
void replacement_started(driver_pointer self, int64_t rank, caf::actor worker) {
  auto& st = self->state;
  auto actions = mstate(self).machine.worker_started(rank, released_through(st));
  if (st.finished ||
      (!actions.empty() && std::holds_alternative<mact::reject_worker>(actions[0]))) {
    self->send_exit(worker, caf::exit_reason::user_shutdown);
    return;
  }
  self->monitor(worker);
  st.roster->set(rank, std::move(worker));
  execute_membership(self, std::move(actions));
}

void spawn_replacement(driver_pointer self, int64_t rank) {
  auto& st = self->state;
  const auto agent = st.options.node_agents.at(static_cast<std::size_t>(rank));
  self->request(agent, 60s, caf::spawn_atom_v, rank, caf::actor_cast<caf::actor>(self))
      .then(
          [self, rank](caf::actor& worker) { replacement_started(self, rank, std::move(worker)); },
          [self, rank](caf::error& e) {
            if (self->state.finished || !mstate(self).machine.is_spawning(rank))
              return;
            lose_node(
                self, rank,
                "could not start worker " + std::to_string(rank) + ": " + self->system().render(e),
                true);
          });
}

}  // namespace

void on_replacement(driver_pointer self, const replacement_node& node) {
  auto& st = self->state;
  const auto refuse = [&](const std::string& why) {
    log_line(st, "node " + node.name + " cannot replace a node: " + why);
    tell(self, node.agent, leave_atom_v, why);
  };
  if (!carries_on(st) || st.finished || st.training_done || st.stop_at)
    return refuse("the run takes no replacement now");
  auto& machine = mstate(self).machine;
  const auto ranks = machine.admit(node.name);
  if (ranks.empty())
    return refuse("the run has all its nodes");
  const auto slot = machine.members().node_of(ranks.front());
  st.options.nodes.at(static_cast<std::size_t>(slot)) = {node.name, node.peer_host, node.peer_port};
  for (auto r : ranks) {
    st.options.node_agents.at(static_cast<std::size_t>(r)) = node.agent;
    st.roster->set_place(r, "node " + node.name);
  }
  log_line(st, fmt::format("node {} replaces a lost node: workers {}", node.name,
                           fmt::join(ranks, ", ")));
  // Introduce it: the live nodes and it trust each other and it links to each of them directly
  // (ring chunks then go node to node), then its workers start.
  std::set<caf::node_id> peers;
  for (auto r : machine.members().live())
    if (const auto& agent = st.options.node_agents.at(static_cast<std::size_t>(r)))
      peers.insert(agent.node());
  // Trust both ways and the direct links, as requests; the workers start once all are done.
  auto outstanding = std::make_shared<int64_t>(0);
  auto failed = std::make_shared<bool>(false);
  const auto finish_step = [self, ranks, outstanding, failed](const caf::error* e) {
    if (*failed || self->state.finished || !mstate(self).machine.is_spawning(ranks.front()))
      return;
    if (e != nullptr) {
      *failed = true;
      return lose_node(self, ranks.front(),
                       "could not be introduced to the live nodes: " + self->system().render(*e),
                       true);
    }
    if (--*outstanding == 0)
      for (auto r : ranks)
        spawn_replacement(self, r);
  };
  const auto ask = [self, finish_step, outstanding](const caf::actor& to, auto... xs) {
    ++*outstanding;
    self->request(to, 20s, xs...)
        .then([finish_step](caf::ok_atom) { finish_step(nullptr); },
              [finish_step](caf::error& e) { finish_step(&e); });
  };
  for (const auto& peer_node : peers) {
    caf::actor peer_agent;
    std::string host, name;
    uint16_t port = 0;
    for (auto r : machine.members().live()) {
      const auto& a = st.options.node_agents.at(static_cast<std::size_t>(r));
      if (a && a.node() == peer_node) {
        peer_agent = a;
        const auto& n = st.options.nodes.at(static_cast<std::size_t>(machine.members().node_of(r)));
        host = n.peer_host;
        port = n.peer_port;
        name = n.name;
        break;
      }
    }
    ask(peer_agent, trust_atom_v, node.agent.node());
    ask(node.agent, trust_atom_v, peer_node);
    if (port != 0)
      ask(node.agent, caf::connect_atom_v, host, port, name);
  }
  if (*outstanding == 0)
    for (auto r : ranks)
      spawn_replacement(self, r);
}
}  // namespace troupe
