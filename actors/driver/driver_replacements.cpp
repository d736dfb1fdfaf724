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

// A replacement's worker is up: it waits for the next step boundary (async: it starts now).
void replacement_started(driver_pointer self, int64_t rank, caf::actor worker) {
  auto& st = self->state;
  auto& m = mstate(self);
  if (m.spawning.erase(rank) == 0 || st.finished) {
    self->send_exit(worker, caf::exit_reason::user_shutdown);
    return;
  }
  self->monitor(worker);
  st.roster->set(rank, std::move(worker));
  m.joining.insert(rank);
  const auto node = m.members.node_of(rank);
  for (auto r : m.members.ranks_of_node(node))
    if (m.joining.count(r) == 0)
      return;  // more of its workers to come
  if (!st.plan->parameter_server()) {
    if (m.round) {
      return;  // the regroup under way ends by calling the next one for it
    }
    return want_regroup(self, act::regroup{m.members.live(), !m.parked_at});
  }
  // async: the parameter server hands it weights; it needs no state of its own.
  m.members.activate_node(node);
  m.members.bump();
  record_joins(self, m.completed_through + 1);
  for (auto r : m.members.ranks_of_node(node))
    execute(self, st.strategy->on_worker_joined(r, st.tracker->elapsed_s()));
  if (!m.members.below_min()) {
    m.waiting_since.reset();
    m.parked_at.reset();
    flush_deferred(self);
  }
}

void spawn_replacement(driver_pointer self, int64_t rank) {
  auto& st = self->state;
  const auto agent = st.options.node_agents.at(static_cast<std::size_t>(rank));
  self->request(agent, 60s, caf::spawn_atom_v, rank, caf::actor_cast<caf::actor>(self))
      .then(
          [self, rank](caf::actor& worker) { replacement_started(self, rank, std::move(worker)); },
          [self, rank](caf::error& e) {
            if (self->state.finished || mstate(self).spawning.count(rank) == 0)
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
  auto& m = mstate(self);
  const auto slot = m.members.admit(node.name);
  if (slot < 0)
    return refuse("the run has all its nodes");
  st.options.nodes.at(static_cast<std::size_t>(slot)) = {node.name, node.peer_host, node.peer_port};
  const auto ranks = m.members.ranks_of_node(slot);
  for (auto r : ranks) {
    st.options.node_agents.at(static_cast<std::size_t>(r)) = node.agent;
    st.roster->set_place(r, "node " + node.name);
    m.spawning.insert(r);
  }
  log_line(st, fmt::format("node {} replaces a lost node: workers {}", node.name,
                           fmt::join(ranks, ", ")));
  // Introduce it: the live nodes and it trust each other and it links to each of them directly
  // (ring chunks then go node to node), then its workers start.
  std::set<caf::node_id> peers;
  for (auto r : m.members.live())
    if (const auto& agent = st.options.node_agents.at(static_cast<std::size_t>(r)))
      peers.insert(agent.node());
  // Trust both ways and the direct links, as requests; the workers start once all are done.
  auto outstanding = std::make_shared<int64_t>(0);
  auto failed = std::make_shared<bool>(false);
  const auto finish_step = [self, ranks, outstanding, failed](const caf::error* e) {
    if (*failed || self->state.finished || mstate(self).spawning.count(ranks.front()) == 0)
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
    for (auto r : m.members.live()) {
      const auto& a = st.options.node_agents.at(static_cast<std::size_t>(r));
      if (a && a.node() == peer_node) {
        peer_agent = a;
        const auto& n = st.options.nodes.at(static_cast<std::size_t>(m.members.node_of(r)));
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
