#include "actors/cluster/run_cluster.hpp"

#include "actors/cluster/bounded_stop.hpp"
#include "actors/cluster/gatekeeper.hpp"
#include "actors/cluster/node_preparation.hpp"
#include "actors/cluster/shipped_job_files.hpp"
#include "actors/cluster/system_config.hpp"
#include "actors/driver/run_driver.hpp"
#include "actors/links/guarded_links.hpp"
#include "core/cluster/link_limits.hpp"
#include "core/collective/gloo_mesh.hpp"
#include "core/run/plan_wire.hpp"
#include "core/run/thread_team.hpp"

#include <fmt/format.h>
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <optional>

namespace troupe {
namespace {

using namespace std::chrono_literals;
// Waits until the gatekeeper has every node (""), or says why not, or the user interrupts.
std::string await_nodes(caf::scoped_actor& self, const caf::actor& gate,
                        const std::atomic<bool>* stop_requested,
                        const std::function<std::string()>& joins_impossible) {
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
              else if (joins_impossible)
                error = joins_impossible();
            });
  return error;
}

// Nodes exit when told the run is over. Waiting for their answers (all at once, for at most a
// few seconds) makes sure the word got out before this process and its connections go away. A
// node already lost counts as answered: monitoring its agent reports it down at once. Returns
// the names of the nodes told.
std::vector<std::string> tell_nodes_done(caf::actor_system& system,
                                         const std::vector<joined_node>& nodes,
                                         const run_report& report) {
  // "failed: why": a node printed only "the run failed", whatever had failed it.
  auto outcome = std::string(to_string(report.status));
  if (report.status != run_status::succeeded && !report.error.empty())
    outcome += ": " + report.error;
  caf::scoped_actor self{system};
  std::vector<std::string> told;
  for (const auto& n : nodes) {
    self->monitor(n.agent);
    // Answered with ok, as an ordinary message.
    self->send(n.agent, done_atom_v, outcome);
    told.push_back(n.name);
  }
  const auto deadline = std::chrono::steady_clock::now() + 3s;
  for (std::size_t answered = 0; answered < nodes.size();) {
    const auto left = deadline - std::chrono::steady_clock::now();
    if (left <= left.zero())
      break;
    self->receive([&](caf::ok_atom) { ++answered; }, [&](caf::error&) { ++answered; },
                  [&](caf::down_msg&) { ++answered; },
                  caf::after(std::chrono::duration_cast<caf::timespan>(left)) >> [] {});
  }
  return told;
}

// Every connection of the run: TLS when asked, frames no larger than the run's largest message,
// peers silent for node_timeout_s cut off.
link_options coordinator_links(const run_plan& plan, const cluster_options& cluster,
                               std::size_t plan_json_bytes, const log_function& log) {
  link_options o;
  o.tls = cluster.tls;
  o.limits.max_message_bytes =
      largest_message_bytes(plan.model.flat_size(), plan.job.cluster.bucket_mb, plan_json_bytes);
  o.limits.idle_timeout_s = plan.job.cluster.node_timeout_s;
  o.log = log;
  return o;
}

run_report failed_report(const run_plan& plan, const std::string& error) {
  run_report r;
  r.status = run_status::failed;
  r.error = error;
  r.replicas = plan.job.parallelism.replicas;
  return r;
}

// The driver, with each rank's worker started by the node that hosts it.
run_report train_on_nodes(caf::actor_system& system, const run_plan& plan, dataset_ptr data,
                          const run_options& options, std::shared_ptr<trusted_nodes> trusted,
                          const std::vector<joined_node>& nodes,
                          const std::vector<int64_t>& node_of, const caf::actor& gate,
                          bool host_memory, bool socket_ring) {
  driver_options d;
  d.host_memory = host_memory;
  d.socket_ring = socket_ring;
  d.context = make_worker_context(plan, std::move(data), std::move(trusted));
  d.run = options;
  for (auto n : node_of) {
    d.node_agents.push_back(nodes[static_cast<std::size_t>(n)].agent);
    d.worker_places.push_back("node " + nodes[static_cast<std::size_t>(n)].name);
  }
  d.node_of = node_of;
  for (const auto& n : nodes) {
    d.nodes.push_back({n.name, n.peer_host, n.peer_port});
    d.shard_hosts.push_back(n.agent);
  }
  if (plan.job.cluster.carries_on())
    d.gatekeeper = gate;
  return await_report(system, spawn_run_driver(system, std::move(d)));
}

gatekeeper_options gate_options(const run_plan& plan, const cluster_options& cluster,
                                const guarded_links& links, const std::string& plan_json,
                                std::shared_ptr<trusted_nodes> trusted, node_roster roster,
                                const log_function& log) {
  const auto& job = plan.job;
  gatekeeper_options o{{TROUPE_VERSION, cluster.token, {}, job.cluster.nodes, links.tls()},
                       plan_json,
                       plan_digest(plan),
                       job.cluster.join_timeout_s,
                       std::move(trusted),
                       log,
                       std::move(roster),
                       {},
                       links.middleman(),
                       {},
                       job.cluster.carries_on()};
  if (links.tls())
    o.names = links.names();
  return o;
}

// Tells these actors to exit when it goes out of scope.
struct stop_on_return {
  std::vector<caf::actor> actors;
  ~stop_on_return() {
    for (const auto& a : actors)
      if (a)
        caf::anon_send_exit(a, caf::exit_reason::user_shutdown);
  }
};

// The run on `system`: what it starts ends here, before the system is stopped.
run_report run_on(caf::actor_system& system, const run_plan& plan, dataset_ptr data,
                  const run_options& options, const std::string& plan_json,
                  const log_function& log) {
  const auto& job = plan.job;
  const auto& cluster = *options.cluster;
  std::optional<guarded_links> links;
  try {
    links.emplace(system, coordinator_links(plan, cluster, plan_json.size(), log));
  } catch (const std::exception& e) {
    return failed_report(plan, std::string("cannot set up TLS: ") + e.what());
  }
  auto trusted = std::make_shared<trusted_nodes>();
  links->judge_joins_by([trusted](const caf::node_id& node) { return trusted->allows(node); });
  auto roster = std::make_shared<std::vector<joined_node>>();
  auto gate_setup = gate_options(plan, cluster, *links, plan_json, trusted, roster, log);
  try {
    gate_setup.files = ship_job_files(system, job, trusted);
  } catch (const std::exception& e) {
    return failed_report(plan, e.what());
  }
  const auto model_server = gate_setup.files.model_server;
  auto gate = spawn_gatekeeper(system, std::move(gate_setup));
  // However this ends (an exception too), the gate and the model server end with it: the
  // system's destructor waits for every actor, and a log line that threw once hung troupe there.
  const stop_on_return stop{{gate, model_server}};
  const auto where = cluster.listen.host + ":" + std::to_string(cluster.listen.port);
  auto port = links->publish(gate, cluster.listen.port, cluster.listen.host);
  if (!port)
    return failed_report(plan, "cannot listen on " + where + ": " + system.render(port.error()));
  log(fmt::format("listening on {}:{}{}, waiting for {} node(s) for up to {} s",
                  cluster.listen.host, *port, links->tls() ? " (TLS)" : "", job.cluster.nodes,
                  job.cluster.join_timeout_s));
  if (cluster.on_listening)
    cluster.on_listening(*port);
  caf::scoped_actor self{system};
  auto error = await_nodes(self, gate, options.stop_requested, cluster.joins_impossible);
  if (!error.empty())  // no more joins: the roster is read below
    ask(self, gate, 5s, caf::close_atom_v);
  // Placement by name, not by who came first: the same nodes give the same ranks every time.
  std::sort(roster->begin(), roster->end(),
            [](const joined_node& a, const joined_node& b) { return a.name < b.name; });
  const auto node_of = place_replicas(job.parallelism.replicas, job.cluster.nodes);
  bool host_memory = false;
  bool socket_ring = false;
  if (error.empty())
    error =
        prepare_nodes(self, *roster, node_of, plan, links->tls(), log, host_memory, socket_ring);
  if (error.empty())
    log(fmt::format("placed {} replica(s) on {} node(s); training", job.parallelism.replicas,
                    roster->size()));
  auto report = error.empty() ? train_on_nodes(system, plan, std::move(data), options, trusted,
                                               *roster, node_of, gate, host_memory, socket_ring)
                              : failed_report(plan, error);
  // No joins from here on: the roster (replacements included) is read below.
  ask(self, gate, 5s, caf::close_atom_v);
  const auto told = tell_nodes_done(system, *roster, report);
  if (cluster.on_ended)
    cluster.on_ended(told);
  links->unpublish(gate, *port);
  return report;
}

}  // namespace

run_report run_cluster(const run_plan& plan, dataset_ptr data, const run_options& options) {
  use_plan_threads(plan);  // as the server's and the final evaluation's (thread_team.hpp)
  const auto& cluster = *options.cluster;
  const log_function log = cluster.log ? cluster.log : [](const std::string&) {};
  if (plan.job.cluster.collective == node_collective::gloo)
    if (const auto why = gloo_refusal(cluster.tls.has_value()); !why.empty())
      return failed_report(plan, "cluster.collective " + why);
  const auto plan_json = plan_to_json(plan).dump();
  if (plan_json.size() + (1 << 20) > pre_join_message_bytes)
    return failed_report(plan, fmt::format("the plan to ship to the nodes is {} bytes, more than a "
                                           "join may carry ({} bytes)",
                                           plan_json.size(), pre_join_message_bytes - (1 << 20)));
  owned_system owned;
  owned.system = std::make_unique<caf::actor_system>(
      configure_networked(*owned.config, coordinator_heartbeat_s(plan.job.cluster.node_timeout_s)));
  auto report = run_on(*owned.system, plan, std::move(data), options, plan_json, log);
  // The nodes were told the run is over: what the system still holds ends within seconds.
  auto limit = std::chrono::milliseconds(30'000);
  if (plan.job.faults.stuck_exit) {  // an actor never released (integration.cluster)
    new caf::actor(owned.system->spawn<caf::detached>([] {}));
    limit = std::chrono::milliseconds(1'000);
  }
  stop_within(std::move(owned), limit, log);
  return report;
}

}  // namespace troupe
