#include "actors/run_cluster.hpp"

#include "actors/coordinator.hpp"
#include "actors/run_training.hpp"
#include "actors/system_config.hpp"
#include "core/cluster/join_check.hpp"
#include "core/config/parse_job.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <set>

namespace troupe {
namespace {

using namespace std::chrono_literals;

caf::timespan seconds(double s) {
  return std::chrono::duration_cast<caf::timespan>(std::chrono::duration<double>(s));
}

struct joined_node {
  std::string name;
  caf::actor agent;
  std::string peer_host;
  uint16_t peer_port = 0;
};

using roster_ptr = std::shared_ptr<std::vector<joined_node>>;

struct gatekeeper_state {
  join_terms terms;
  std::string job_json;
  double join_timeout_s = 0;
  std::shared_ptr<trusted_nodes> trusted;
  std::function<void(const std::string&)> log;
  /// Shared with the session, which reads it only after `waiting` delivered.
  roster_ptr roster;
  caf::response_promise waiting;
  bool closed = false;  ///< the roster went to the session (or the wait timed out)
  static inline const char* name = "gatekeeper";
};

using gatekeeper_actor = caf::stateful_actor<gatekeeper_state>;

std::string names_of(const std::vector<joined_node>& nodes) {
  std::string out;
  for (const auto& n : nodes)
    out += (out.empty() ? "" : ", ") + n.name;
  return out.empty() ? "none" : out;
}

void close_when_complete(gatekeeper_actor* self) {
  auto& st = self->state;
  if (st.closed || !st.waiting.pending() ||
      st.roster->size() < static_cast<std::size_t>(st.terms.wanted))
    return;
  st.closed = true;
  st.waiting.deliver(std::string());
}

// The published actor: answers joins, and tells the session when the roster is complete (or
// why it never will be).
caf::behavior gatekeeper(gatekeeper_actor* self, gatekeeper_state init) {
  self->state = std::move(init);
  self->set_down_handler([self](caf::down_msg& msg) {
    auto& st = self->state;
    if (st.closed)
      return;  // from here on the coordinator watches the workers
    auto& roster = *st.roster;
    for (std::size_t i = 0; i < roster.size(); ++i)
      if (roster[i].agent.address() == msg.source) {
        st.log("node " + roster[i].name + " left before the run started (" +
               self->system().render(msg.reason) + ")");
        st.terms.joined.erase(st.terms.joined.begin() + static_cast<std::ptrdiff_t>(i));
        roster.erase(roster.begin() + static_cast<std::ptrdiff_t>(i));
        return;
      }
  });
  return {
      [self](caf::join_atom, join_request& req) -> join_reply {
        auto& st = self->state;
        const auto& sender = self->current_sender();
        auto refusal = join_refusal({req.version, req.token, req.name, req.threads}, st.terms);
        if (refusal.empty() && st.closed)
          refusal = "node \"" + req.name + "\": the run has started";
        if (refusal.empty() && (!sender || !req.agent || req.agent->node() != sender->node()))
          refusal = "node \"" + req.name + "\": its agent is not on the node that sent the join";
        if (!refusal.empty()) {
          st.log("refused a join: " + refusal);
          return {refusal, ""};
        }
        st.trusted->allow(sender->node());
        self->monitor(req.agent);
        st.terms.joined.push_back(req.name);
        st.roster->push_back({req.name, req.agent, req.peer_host, req.peer_port});
        st.log(fmt::format("node {} joined ({} threads; {} of {})", req.name, req.threads,
                           st.roster->size(), st.terms.wanted));
        close_when_complete(self);
        return {"", st.job_json};
      },
      [self](caf::get_atom) {
        auto& st = self->state;
        // Checked first: a response promise takes the sender out of the current message.
        const bool refused = !sender_trusted(self, st.trusted.get()) || st.waiting.pending();
        auto promise = self->make_response_promise();
        if (refused) {
          promise.deliver(caf::make_error(caf::sec::invalid_argument));
          return promise;
        }
        st.waiting = promise;
        self->delayed_send(self, seconds(st.join_timeout_s), caf::timeout_atom_v);
        close_when_complete(self);
        return promise;
      },
      [self](caf::timeout_atom) {
        auto& st = self->state;
        if (st.closed || self->current_sender() != self->ctrl())
          return;
        st.closed = true;
        st.waiting.deliver(fmt::format("{} of {} node(s) joined within {} s (joined: {})",
                                       st.roster->size(), st.terms.wanted, st.join_timeout_s,
                                       names_of(*st.roster)));
      },
  };
}

// Blocks on a request from a scoped actor; returns the error text, or "" on success.
template <class Timeout, class... Ts>
std::string ask(caf::scoped_actor& self, const caf::actor& to, Timeout timeout, Ts&&... xs) {
  std::string error;
  self->request(to, timeout, std::forward<Ts>(xs)...)
      .receive([](caf::ok_atom) {}, [&](caf::error& e) { error = self->system().render(e); });
  return error;
}

// Waits until the gatekeeper has every node (""), or says why not, or the user interrupts.
std::string await_nodes(caf::scoped_actor& self, const caf::actor& gate,
                        const std::atomic<bool>* stop_requested) {
  // Answered, as an ordinary message, with "" once every node is in, or why they are not.
  self->send(gate, caf::get_atom_v);
  std::string error;
  for (bool ready = false; !ready && error.empty();)
    self->receive(
        [&](std::string& why) {
          ready = why.empty();
          error = why;
        },
        [&](caf::error& e) { error = self->system().render(e); },
        caf::after(std::chrono::milliseconds(200)) >>
            [&] {
              if (stop_requested != nullptr && stop_requested->load())
                error = "interrupted while waiting for nodes";
            });
  return error;
}

// Everything between "all nodes joined" and "the coordinator may start": every node trusts the
// others, and nodes hosting ring neighbors connect directly (ring traffic would otherwise relay
// through this process). Returns the error text, or "".
std::string prepare_nodes(caf::scoped_actor& self, const std::vector<joined_node>& nodes,
                          const std::vector<int64_t>& node_of, bool ring,
                          const std::function<void(const std::string&)>& log) {
  for (const auto& a : nodes)
    for (const auto& b : nodes)
      if (a.agent.node() != b.agent.node())
        if (auto err = ask(self, a.agent, 10s, trust_atom_v, b.agent.node()); !err.empty())
          return "node " + a.name + " did not take the roster: " + err;
  if (!ring)
    return "";
  std::set<std::pair<int64_t, int64_t>> links;
  const auto n = node_of.size();
  for (std::size_t r = 0; r < n; ++r)
    if (node_of[r] != node_of[(r + 1) % n])
      links.emplace(node_of[r], node_of[(r + 1) % n]);
  for (const auto& [from, to] : links) {
    const auto& a = nodes[static_cast<std::size_t>(from)];
    const auto& b = nodes[static_cast<std::size_t>(to)];
    if (b.peer_port == 0)
      return "node " + b.name + " takes no peer connections";
    if (auto err = ask(self, a.agent, 30s, caf::connect_atom_v, b.peer_host, b.peer_port);
        !err.empty())
      return fmt::format("node {} could not connect to node {} at {}:{}: {}", a.name, b.name,
                         b.peer_host, b.peer_port, err);
    log(fmt::format("ring link {} -> {} ({}:{})", a.name, b.name, b.peer_host, b.peer_port));
  }
  return "";
}

// Nodes exit when told the run is over. Waiting for their answers (all at once, for at most a
// few seconds) makes sure the word got out before this process and its connections go away. A
// node already lost counts as answered: monitoring its agent reports it down at once.
void tell_nodes_done(caf::actor_system& system, const std::vector<joined_node>& nodes,
                     const std::string& status) {
  caf::scoped_actor self{system};
  for (const auto& n : nodes) {
    self->monitor(n.agent);
    self->send(n.agent, done_atom_v, status);  // answered with ok, as an ordinary message
  }
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  for (std::size_t answered = 0; answered < nodes.size();) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= left.zero())
      return;
    self->receive([&](caf::ok_atom) { ++answered; }, [&](caf::error&) { ++answered; },
                  [&](caf::down_msg&) { ++answered; },
                  caf::after(std::chrono::duration_cast<caf::timespan>(left)) >> [] {});
  }
}

run_report failed_report(const job_config& job, const std::string& error) {
  run_report r;
  r.status = "failed";
  r.error = error;
  r.replicas = job.parallelism.replicas;
  return r;
}

}  // namespace

run_report run_cluster(const job_config& job, dataset_ptr data, const run_options& options,
                       const cluster_options& cluster) {
  at::set_num_threads(1);
  const auto log = cluster.log ? cluster.log : [](const std::string&) {};
  auto setup = make_replica_setup(job, std::move(data));
  auto trusted = std::make_shared<trusted_nodes>();
  setup->trusted = trusted;
  auto roster = std::make_shared<std::vector<joined_node>>();

  caf::actor_system_config cfg;
  caf::actor_system system{configure_networked(cfg, job.cluster.node_timeout_s)};
  gatekeeper_state init;
  init.terms = {TROUPE_VERSION, cluster.token, {}, job.cluster.nodes};
  init.job_json = to_json(job).dump();
  init.join_timeout_s = job.cluster.join_timeout_s;
  init.trusted = trusted;
  init.log = log;
  init.roster = roster;
  auto gate = system.spawn(gatekeeper, std::move(init));
  const auto where = cluster.listen.host + ":" + std::to_string(cluster.listen.port);
  auto port = system.middleman().publish(gate, cluster.listen.port, cluster.listen.host.c_str());
  if (!port) {
    caf::anon_send_exit(gate, caf::exit_reason::user_shutdown);
    return failed_report(job, "cannot listen on " + where + ": " + system.render(port.error()));
  }
  log(fmt::format("listening on {}:{}, waiting for {} node(s) for up to {} s", cluster.listen.host,
                  *port, job.cluster.nodes, job.cluster.join_timeout_s));
  if (cluster.on_listening)
    cluster.on_listening(*port);

  caf::scoped_actor self{system};
  auto error = await_nodes(self, gate, options.stop_requested);
  // Placement by name, not by who came first: the same nodes give the same ranks every time.
  std::sort(roster->begin(), roster->end(),
            [](const joined_node& a, const joined_node& b) { return a.name < b.name; });
  const auto node_of = place_replicas(job.parallelism.replicas, job.cluster.nodes);
  if (error.empty())
    error = prepare_nodes(self, *roster, node_of, setup->ring, log);

  run_report report;
  if (!error.empty()) {
    report = failed_report(job, error);
  } else {
    auto copts = make_coordinator_options(setup, options);
    std::vector<caf::actor> agents;
    for (const auto& n : *roster)
      agents.push_back(n.agent);
    for (auto n : node_of)
      copts.worker_places.push_back("node " + (*roster)[static_cast<std::size_t>(n)].name);
    copts.spawn_worker = [&system, agents, node_of, places = copts.worker_places](
                             int64_t rank, coordinator_actor coordinator) {
      // Blocks the coordinator while the node answers: this happens once per replica, before
      // the first step.
      caf::scoped_actor s{system};
      replica_worker_actor worker;
      std::string why = "no answer";
      s->request(agents[static_cast<std::size_t>(node_of[static_cast<std::size_t>(rank)])], 60s,
                 caf::spawn_atom_v, rank, caf::actor_cast<caf::actor>(coordinator))
          .receive([&](caf::actor& w) { worker = caf::actor_cast<replica_worker_actor>(w); },
                   [&](caf::error& e) { why = system.render(e); });
      if (!worker)
        throw std::runtime_error("could not start worker " + std::to_string(rank) + " on " +
                                 places[static_cast<std::size_t>(rank)] + ": " + why);
      return worker;
    };
    log(fmt::format("placed {} replica(s) on {} node(s); training", job.parallelism.replicas,
                    roster->size()));
    report = run_coordinator(
        system, caf::actor_cast<caf::actor>(spawn_coordinator(system, std::move(copts))));
  }
  tell_nodes_done(system, *roster, report.status);
  system.middleman().unpublish(gate, *port);
  self->send_exit(gate, caf::exit_reason::user_shutdown);
  return report;
}

}  // namespace troupe
