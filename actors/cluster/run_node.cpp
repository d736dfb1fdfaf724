#include "actors/cluster/run_node.hpp"

#include "actors/cluster/node_agent.hpp"
#include "actors/cluster/shipped_job_files.hpp"
#include "actors/cluster/system_config.hpp"
#include "actors/links/guarded_links.hpp"
#include "actors/workers/replica_worker.hpp"
#include "core/cluster/join_check.hpp"
#include "core/cluster/link_limits.hpp"
#include "core/config/parse_job.hpp"
#include "core/data/data_source.hpp"
#include "core/io/owned_temp_folder.hpp"
#include "messages/error_code.hpp"

#include <ATen/Parallel.h>
#include <fmt/format.h>
#include <caf/all.hpp>
#include <caf/io/all.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

namespace troupe {
namespace {

using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

// How long a node asked to stop stays in the run, for the coordinator to end it.
constexpr std::chrono::seconds stop_grace{10};

// Connects to the coordinator's gatekeeper, retrying while the coordinator starts up. A
// connection that TLS refused is not retried: the certificate will not change.
caf::expected<std::pair<caf::node_id, caf::actor>> connect(caf::actor_system& system,
                                                           guarded_links& links,
                                                           const node_options& o) {
  caf::scoped_actor self{system};
  const auto deadline = clock_type::now() + std::chrono::duration_cast<clock_type::duration>(
                                                std::chrono::duration<double>(o.connect_timeout_s));
  caf::error last;
  for (bool first = true;; first = false) {
    std::optional<std::pair<caf::node_id, caf::actor>> result;
    self->request(links.middleman(), 10s, caf::connect_atom_v, o.coordinator.host,
                  o.coordinator.port)
        .receive(
            [&](caf::node_id& node, caf::strong_actor_ptr& handle, std::set<std::string>&) {
              result.emplace(node, caf::actor_cast<caf::actor>(handle));
            },
            [&](caf::error& e) { last = std::move(e); });
    if (result && result->second)
      return *result;
    if (result)
      return caf::make_error(caf::sec::no_actor_published_at_port, "nothing troupe listens there");
    if (const auto why = links.last_tls_failure(); !why.empty())
      return caf::make_error(caf::sec::cannot_connect_to_node, why);
    if (clock_type::now() >= deadline || (o.stop_requested && o.stop_requested->load()))
      return last;
    if (first && o.log)
      o.log(fmt::format("node {}: waiting for the coordinator at {}:{}", o.name, o.coordinator.host,
                        o.coordinator.port));
    std::this_thread::sleep_for(200ms);
  }
}

// With TLS, the name on the certificate of the process this node reached; "" when it is the
// coordinator's (or without TLS), else why not: a node never sends its token to anyone else.
std::string not_the_coordinator(caf::actor_system& system, guarded_links& links,
                                const caf::node_id& node) {
  if (!links.tls())
    return "";
  caf::scoped_actor self{system};
  std::string name;
  self->request(links.middleman(), 5s, caf::get_atom_v, node)
      .receive([&](caf::node_id&, std::string& addr,
                   uint16_t port) { name = links.names().at(addr, port); },
               [](caf::error&) {});
  if (name == coordinator_name)
    return "";
  return "it presented the certificate of \"" + name + "\", not the coordinator's";
}

link_options node_links(const node_options& o) {
  link_options l;
  l.tls = o.tls;
  l.limits.max_message_bytes = pre_join_message_bytes;
  l.limits.idle_timeout_s = o.coordinator_timeout_s;
  l.log = [log = o.log, name = o.name](const std::string& line) {
    if (log)
      log("node " + name + ": " + line);
  };
  return l;
}

// The run is over and the node has nothing left to save, but CAF 0.17's shutdown (it waits for
// every detached actor's thread) was seen to wait forever, about one exit in ten, when the ring
// peers' connections close in the same instant. A node must never hang: if the actor system has
// not shut down a few seconds after this call, the process ends with `code` anyway.
void exit_if_shutdown_hangs(int code) {
  std::thread([code] {
    std::this_thread::sleep_for(2s);
    std::fflush(nullptr);
    std::_Exit(code);
  }).detach();
}

// Until the agent (monitored by `self`) is down: the run ends it, or a stop request ends it here
// after a grace period. A terminal's Ctrl-C reaches the coordinator too (--local-nodes, one
// process group), which stops the run at its step and wants this node's part of the checkpoint;
// a node that left at once failed that run (exit 1, no checkpoint) when the stop came during an
// evaluation. The coordinator sees a node that leaves as lost (it fails the run, or replaces the
// node where it may).
void wait_for_the_run_to_end(caf::scoped_actor& self, const caf::actor& agent,
                             const node_options& o,
                             const std::function<void(const std::string&)>& log) {
  std::optional<clock_type::time_point> leave_at;
  for (bool down = false, stopping = false; !down;) {
    self->receive([&](caf::down_msg&) { down = true; },
                  caf::after(std::chrono::milliseconds(100)) >>
                      [&] {
                        if (stopping || !o.stop_requested || !o.stop_requested->load())
                          return;
                        if (!leave_at) {
                          leave_at = clock_type::now() + stop_grace;
                          log(fmt::format(
                              "node {}: stopping: leaving the run in {} s unless it ends "
                              "first (a second interrupt leaves at once)",
                              o.name, stop_grace.count()));
                        }
                        if (clock_type::now() < *leave_at)
                          return;
                        stopping = true;
                        self->send_exit(agent, caf::exit_reason::user_shutdown);
                      });
  }
}

// Joins and serves the run until the agent stops; the exit code.
int serve(caf::actor_system& system, guarded_links& links, const node_options& o) {
  const auto log = o.log ? o.log : [](const std::string&) {};
  auto trusted = std::make_shared<trusted_nodes>();
  links.judge_joins_by([trusted](const caf::node_id& node) { return trusted->allows(node); });
  auto outcome = std::make_shared<node_outcome>();
  agent_state init;
  init.node_name = o.name;
  init.peer_host = o.peer_host;
  init.trusted = trusted;
  init.outcome = outcome;
  init.log = log;
  init.links = &links;
  std::optional<owned_temp_folder> scratch;  // the job's files this node fetches
  try {
    scratch.emplace("troupe-node");
  } catch (const std::exception& e) {
    log("node " + o.name + ": " + e.what());
    return 1;
  }
  init.scratch = scratch->path();
  auto agent = system.spawn(node_agent, std::move(init));
  caf::scoped_actor self{system};
  self->monitor(agent);
  const auto give_up = [&](const std::string& why) {
    log("node " + o.name + ": " + why);
    self->send_exit(agent, caf::exit_reason::user_shutdown);
    self->receive([](caf::down_msg&) {}, caf::after(2s) >> [] {});
    return 1;
  };
  auto peer_port = links.publish(agent, 0, o.peer_host);
  if (!peer_port)
    return give_up("cannot listen for peers on " + o.peer_host + ": " +
                   system.render(peer_port.error()));
  const auto where = fmt::format("{}:{}", o.coordinator.host, o.coordinator.port);
  const auto gate = connect(system, links, o);
  if (!gate && o.stop_requested && o.stop_requested->load()) {
    // Ctrl-C while it waited for the coordinator: a stop, not a failure to reach it.
    give_up("stopped by an interrupt before it joined");
    return node_stopped;
  }
  if (!gate) {
    // CAF's words alone ("disconnect_during_handshake") did not say what to change.
    const bool cut = gate.error() == caf::sec::disconnect_during_handshake;
    return give_up("cannot reach the coordinator at " + where + ": " + system.render(gate.error()) +
                   (cut && !links.tls()
                        ? " (it closed the connection during the handshake: does the coordinator "
                          "run with --tls? then this node needs --tls too; else its log says "
                          "why it closed it)"
                        : ""));
  }
  if (const auto why = not_the_coordinator(system, links, gate->first); !why.empty())
    return give_up("refused the coordinator at " + where + ": " + why);
  trusted->allow(gate->first);
  join_request req{o.version, "", o.name, o.threads, o.peer_host, *peer_port, {}};
  self->send(agent, caf::join_atom_v, gate->second, std::move(req), o.token);
  wait_for_the_run_to_end(self, agent, o, log);
  if (o.stop_requested && o.stop_requested->load()) {
    log("node " + o.name + ": stopped by an interrupt; left the run");
    links.unpublish(agent, *peer_port);
    return node_stopped;
  }
  int code = 0;
  if (!outcome->error.empty()) {
    log("node " + o.name + ": " + outcome->error);
    code = 1;
  } else {
    // "succeeded", or a status and why: "failed: worker 1 (node b) failed: ..."
    log("node " + o.name + ": the run " + outcome->status);
    code = outcome->status == to_string(run_status::succeeded) ? 0 : 1;
  }
  links.unpublish(agent, *peer_port);
  return code;
}

}  // namespace

int run_node(const node_options& o) {
  at::set_num_threads(1);
  caf::actor_system_config cfg;
  caf::actor_system system{configure_networked(cfg)};
  std::optional<guarded_links> links;  // after `system`: it must go first
  try {
    links.emplace(system, node_links(o));
  } catch (const std::exception& e) {
    if (o.log)
      o.log("node " + o.name + ": cannot set up TLS: " + e.what());
    return 1;
  }
  const int code = serve(system, *links, o);
  exit_if_shutdown_hangs(code);
  return code;
}

}  // namespace troupe
