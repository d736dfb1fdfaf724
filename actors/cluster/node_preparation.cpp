// Where the nodes' sync gradients will meet, settled before the driver starts
// (node_preparation.hpp).
#include "actors/cluster/node_preparation.hpp"

#include "actors/exchange/socket_ring_places.hpp"
#include "core/collective/host_reduction.hpp"
#include "messages/type_ids.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <caf/all.hpp>

#include <algorithm>
#include <chrono>
#include <numeric>
#include <set>

namespace troupe {
namespace {

using namespace std::chrono_literals;

// Node a's agent opens a direct connection to node b's (actors/cluster/node_agent: connect_peer).
// Returns the error text, or "".
std::string connect_nodes(caf::scoped_actor& self, const joined_node& a, const joined_node& b) {
  if (b.peer_port == 0)
    return "node " + b.name + " takes no peer connections";
  if (auto err = ask(self, a.agent, 30s, caf::connect_atom_v, b.peer_host, b.peer_port, b.name);
      !err.empty())
    return fmt::format("node {} could not connect to node {} at {}:{}: {}", a.name, b.name,
                       b.peer_host, b.peer_port, err);
  return "";
}

// Nodes hosting ring neighbors connect directly (ring traffic would otherwise relay through
// this process). `standby`: the socket ring carries the sums, these links only a ring over
// actors that a regroup falls back to. Each link's log line says what carries it: the
// connection between the two processes, TLS 1.3 under --tls. Returns the error text, or "".
std::string link_ring(caf::scoped_actor& self, const std::vector<joined_node>& nodes,
                      const std::vector<int64_t>& node_of, const log_function& log, bool standby,
                      bool tls) {
  std::set<std::pair<int64_t, int64_t>> links;
  const auto n = node_of.size();
  for (std::size_t r = 0; r < n; ++r)
    if (node_of[r] != node_of[(r + 1) % n])
      links.emplace(node_of[r], node_of[(r + 1) % n]);
  for (const auto& [from, to] : links) {
    const auto& a = nodes[static_cast<std::size_t>(from)];
    const auto& b = nodes[static_cast<std::size_t>(to)];
    if (auto err = connect_nodes(self, a, b); !err.empty())
      return err;
    log(fmt::format("ring link {} -> {}{} ({}:{}, {})", a.name, b.name,
                    standby ? " over actors, should the socket ring not form again" : "",
                    b.peer_host, b.peer_port,
                    tls ? "TLS 1.3: gradients encrypted" : "plain TCP: gradients not encrypted"));
  }
  return "";
}

// async with a sharded server: every worker pushes to and pulls from every shard, one on each
// node in turn (nodes 0..shards-1), so every node gets a direct connection to every node that
// holds a shard (no detour through the coordinator); two nodes without a shard need none.
std::string link_for_shards(caf::scoped_actor& self, const std::vector<joined_node>& nodes,
                            int64_t shards, bool tls, const log_function& log) {
  const auto holders = std::min(nodes.size(), static_cast<std::size_t>(shards));
  for (std::size_t i = 0; i < holders; ++i)
    for (std::size_t j = i + 1; j < nodes.size(); ++j)
      if (auto err = connect_nodes(self, nodes[i], nodes[j]); !err.empty())
        return err;
  std::string places;
  for (int64_t k = 0; k < shards; ++k)
    places += fmt::format("{}{} on {}", k == 0 ? "" : ", ", k,
                          nodes[static_cast<std::size_t>(k) % nodes.size()].name);
  log(
      fmt::format("parameter server in {} shards ({}); workers push and pull every shard "
                  "directly ({})",
                  shards, places, tls ? "TLS 1.3" : "plain TCP"));
  return "";
}

// Asks the nodes of `group` (indices into `nodes`) to open `segment`, the first one creating
// it; then all keep it (its name removed) or, when one could not, all drop it. Returns the error
// text ("node NAME: why"), or "".
std::string open_on_nodes(caf::scoped_actor& self, const std::vector<joined_node>& nodes,
                          const std::vector<std::size_t>& group, host_segment segment) {
  std::string error;
  std::size_t opened = 0;
  for (; opened < group.size() && error.empty(); ++opened) {
    segment.create = opened == 0;
    if (auto e = ask(self, nodes[group[opened]].agent, 10s, shm_atom_v, segment); !e.empty())
      error = "node " + nodes[group[opened]].name + ": " + e;
  }
  for (std::size_t i = 0; i < opened; ++i)
    ask(self, nodes[group[i]].agent, 10s, shm_atom_v, caf::close_atom_v, error.empty());
  return error;
}

// Which nodes share a host, found by trying rather than guessed from host names: the first node
// not yet placed creates a one-value segment, and every other one tries to open it; those that
// can share its /dev/shm, so its memory. Groups of node indices, each ascending, in the order of
// their first node. One request per node and group: milliseconds for a hundred nodes.
std::vector<std::vector<std::size_t>> host_groups(caf::scoped_actor& self,
                                                  const std::vector<joined_node>& nodes) {
  std::vector<std::vector<std::size_t>> groups;
  std::vector<bool> placed(nodes.size(), false);
  for (std::size_t first = 0; first < nodes.size(); ++first) {
    if (placed[first])
      continue;
    std::vector<std::size_t> group{first};
    placed[first] = true;
    host_segment probe{new_segment_name(), new_segment_nonce(), true, {}};
    if (ask(self, nodes[first].agent, 10s, shm_atom_v, probe).empty()) {
      probe.create = false;
      for (std::size_t other = first + 1; other < nodes.size(); ++other)
        if (!placed[other] && ask(self, nodes[other].agent, 10s, shm_atom_v, probe).empty()) {
          group.push_back(other);
          placed[other] = true;
        }
      for (auto i : group)
        ask(self, nodes[i].agent, 10s, shm_atom_v, caf::close_atom_v, false);
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

// The ranks the nodes of `group` host, ascending.
std::vector<int64_t> ranks_on(const std::vector<std::size_t>& group,
                              const std::vector<int64_t>& node_of) {
  std::vector<int64_t> ranks;
  for (std::size_t r = 0; r < node_of.size(); ++r)
    if (std::find(group.begin(), group.end(), static_cast<std::size_t>(node_of[r])) != group.end())
      ranks.push_back(static_cast<int64_t>(r));
  return ranks;
}

// "a, b | c, d": the nodes of each host.
std::string describe_hosts(const std::vector<joined_node>& nodes,
                           const std::vector<std::vector<std::size_t>>& groups) {
  std::vector<std::string> hosts;
  for (const auto& group : groups) {
    std::vector<std::string> names;
    for (auto i : group)
      names.push_back(nodes[i].name);
    hosts.push_back(fmt::format("{}", fmt::join(names, ", ")));
  }
  return fmt::format("{}", fmt::join(hosts, " | "));
}

// One step of forming the socket ring on every node in turn (messages/cluster.hpp,
// ring_places); each node's answer replaces its places, once it holds a port for each of the
// node's ranks (the one after listening: every later step answers with the same). Returns the
// error text, or "".
template <class... Ts>
std::string ring_step(caf::scoped_actor& self, const std::vector<joined_node>& nodes,
                      std::vector<ring_places>& places, Ts... xs) {
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    std::string error;
    self->request(nodes[i].agent, 30s, ring_atom_v, xs..., places[i])
        .receive(
            [&](ring_places& answer) {
              error = ring_answer_problem(places[i], answer);
              if (error.empty())
                places[i] = std::move(answer);
            },
            [&](caf::error& e) { error = self->system().render(e); });
    if (!error.empty())
      return "node " + nodes[i].name + ": " + error;
  }
  return "";
}

// Sync gradients between nodes over the socket ring (core/collective/socket_ring.hpp): plain
// TCP between ring neighbours, each connection opened with the ring's secret, no actor in
// between. Every node listens for its ranks' predecessors, then connects its ranks to their
// successors, then takes its predecessors' connections. The ring of epoch 0, every rank in
// order; a run that carries on forms it again at each regroup
// (actors/driver/driver_ring_forming.cpp). Returns "" once formed; otherwise why not, every node
// having dropped its places (the ring then runs over actors).
std::string form_socket_ring(caf::scoped_actor& self, const std::vector<joined_node>& nodes,
                             const std::vector<int64_t>& node_of,
                             const std::vector<int64_t>& members, bool tls,
                             const log_function& log) {
  std::vector<std::size_t> node_of_member;
  std::vector<std::string> hosts;
  for (auto r : members)
    node_of_member.push_back(static_cast<std::size_t>(node_of.at(static_cast<std::size_t>(r))));
  for (const auto& n : nodes)
    hosts.push_back(n.peer_host);
  auto places = plan_ring_places(0, members, node_of_member, nodes.size());
  auto error = ring_step(self, nodes, places, caf::open_atom_v);
  if (error.empty()) {
    link_ring_places(places, hosts);
    error = ring_step(self, nodes, places, caf::connect_atom_v);
  }
  if (error.empty())
    error = ring_step(self, nodes, places, caf::join_atom_v);
  if (!error.empty()) {
    for (const auto& n : nodes)
      ask(self, n.agent, 10s, ring_atom_v, caf::close_atom_v);
    return error;
  }
  if (!places.front().mesh.empty()) {
    log(
        fmt::format("gloo mesh formed among workers {} (cluster.collective): each sum is "
                    "gloo's halving-doubling over plain TCP, gradients not encrypted",
                    fmt::join(members, ", ")));
    return "";
  }
  const auto count = members.size();
  for (std::size_t k = 0; k < count; ++k) {
    const auto from = node_of_member[k];
    const auto to = node_of_member[(k + 1) % count];
    if (from == to)
      continue;
    const auto& p = places[from];
    const auto i = static_cast<std::size_t>(std::find(p.ranks.begin(), p.ranks.end(), members[k]) -
                                            p.ranks.begin());
    log(fmt::format("ring link {} -> {} (rank {} -> {}: socket ring{} to {}:{}, {})",
                    nodes[from].name, nodes[to].name, members[k], members[(k + 1) % count],
                    tls ? "" : ", plain TCP", p.next_hosts.at(i), p.next_ports.at(i),
                    tls ? "TLS 1.3: gradients encrypted" : "gradients not encrypted"));
  }
  return "";
}

// Sync gradients through each host's memory, then among the hosts: the nodes of each host
// (`groups`, by host_groups) open one segment for their ranks, and the first rank of each host,
// its leader, joins a socket ring of the leaders. Per step a leader sums its host's gradients,
// the hosts' sums go round the ring, and it hands the total back in the segment: only one rank
// per host crosses the network, 2(H - 1) ring hops instead of 2(R - 1). The sum's order differs
// from the flat ring's (each host's ranks first), so it agrees to rounding, not bit for bit.
// Returns "" when every segment and the ring are there; otherwise why not, every node having
// dropped them.
std::string sum_by_host(caf::scoped_actor& self, const std::vector<joined_node>& nodes,
                        const std::vector<int64_t>& node_of,
                        const std::vector<std::vector<std::size_t>>& groups, bool tls,
                        node_collective collective, const log_function& log) {
  std::vector<int64_t> leaders;
  std::string error;
  for (const auto& group : groups) {
    const auto ranks = ranks_on(group, node_of);
    if (ranks.empty())
      continue;
    leaders.push_back(ranks.front());
    if (ranks.size() > 1 && error.empty())
      error =
          open_on_nodes(self, nodes, group, {new_segment_name(), new_segment_nonce(), true, ranks});
  }
  std::sort(leaders.begin(), leaders.end());
  if (error.empty())
    error = form_socket_ring(self, nodes, node_of, leaders, tls, log);
  if (!error.empty()) {
    for (const auto& n : nodes)
      ask(self, n.agent, 10s, shm_atom_v, caf::close_atom_v, false);
    return error;
  }
  log(
      fmt::format("{} nodes on {} hosts ({}): sync gradients are summed in each host's memory, "
                  "then among the hosts' leaders (workers {}) over the {} (cluster.shared_memory)",
                  nodes.size(), groups.size(), describe_hosts(nodes, groups),
                  fmt::join(leaders, ", "), collective_name(collective)));
  return "";
}

}  // namespace

// Everything between "all nodes joined" and "the driver may start": every node trusts the
// others, and ring neighbours are linked or (`shared` set) all share memory or (`socket` set)
// the socket ring is formed. Returns the error text, or "".
std::string prepare_nodes(caf::scoped_actor& self, const std::vector<joined_node>& nodes,
                          const std::vector<int64_t>& node_of, const run_plan& plan, bool tls,
                          const log_function& log, bool& shared, bool& socket) {
  for (const auto& a : nodes)
    for (const auto& b : nodes)
      if (a.agent.node() != b.agent.node())
        if (auto err = ask(self, a.agent, 10s, trust_atom_v, b.agent.node()); !err.empty())
          return "node " + a.name + " did not take the roster: " + err;
  if (plan.sharded_server())
    return link_for_shards(self, nodes, plan.server_shards(), tls, log);
  if (plan.gradients != gradient_meeting::ring)
    return "";
  // The shared-memory sum waits for every node of the host at its barriers: a run that goes on
  // without a lost node (cluster.on_node_loss "continue") re-forms the ring instead.
  const bool membership_may_change = plan.job.cluster.on_node_loss == node_loss_policy::carry_on;
  if (plan.job.cluster.shared_memory && membership_may_change)
    log("cluster.on_node_loss is \"continue\": sync gradients go round the ring, which survives "
        "a lost node (the shared-memory sum would wait for it)");
  // Every way below sums host memory: a GPU worker hands its gradient's copy in pinned host
  // memory (actors/workers/replica_worker.cpp). Under --tls the socket ring is encrypted (TLS
  // 1.3 with the nodes' certificates). Ring links over actors are made either way: a regroup
  // whose socket ring cannot be formed falls back to them.
  std::vector<int64_t> every_rank(node_of.size());
  std::iota(every_rank.begin(), every_rank.end(), 0);
  if (plan.job.cluster.shared_memory && !membership_may_change) {
    const auto groups = host_groups(self, nodes);
    if (groups.size() == 1) {
      std::vector<std::size_t> all(nodes.size());
      std::iota(all.begin(), all.end(), 0);
      const auto why = open_on_nodes(self, nodes, all,
                                     {new_segment_name(), new_segment_nonce(), true, every_rank});
      shared = why.empty();
      if (shared) {
        log(
            fmt::format("all {} node(s) share this host's memory: sync gradients are summed "
                        "there (cluster.shared_memory)",
                        nodes.size()));
        return "";
      }
      log("the nodes could not share this host's memory (" + why +
          "): the ring runs over the network");
    } else if (groups.size() < nodes.size()) {
      const auto why =
          sum_by_host(self, nodes, node_of, groups, tls, plan.job.cluster.collective, log);
      socket = why.empty();
      if (socket)
        return "";
      log("the sum by host could not be set up (" + why + "): every rank joins the ring");
    } else {
      log(fmt::format(
          "no two of the {} nodes share a host's memory: the ring runs over the network",
          nodes.size()));
    }
  }
  const auto why = form_socket_ring(self, nodes, node_of, every_rank, tls, log);
  socket = why.empty();
  if (socket && !membership_may_change)
    return "";
  if (!socket)
    log(fmt::format("the {} could not be formed ({}): the ring runs over actors",
                    collective_name(plan.job.cluster.collective), why));
  return link_ring(self, nodes, node_of, log, socket, tls);
}

}  // namespace troupe
