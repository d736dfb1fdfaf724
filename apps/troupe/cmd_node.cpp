// `troupe node --join HOST:PORT`: joins a coordinator and trains the replicas it places here
// (or K nodes do, under --processes K).
#include "actors/cluster/run_node.hpp"
#include "apps/troupe/cluster_launch.hpp"
#include "apps/troupe/commands.hpp"
#include "apps/troupe/job_loading.hpp"
#include "apps/troupe/node_processes.hpp"
#include "apps/troupe/stop_request.hpp"
#include "core/cluster/certs.hpp"
#include "core/cluster/join_check.hpp"
#include "core/cluster/slurm_env.hpp"
#include "core/cluster/token.hpp"
#include "core/errors.hpp"
#include "core/io/terminal_output.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <csignal>
#include <cstdlib>
#include <thread>
#include <vector>

namespace troupe {
namespace {

// The command with what a Slurm step's environment says where the flags do not
// (core/cluster/slurm_env.hpp). Throws job_error naming a variable that is wrong.
node_command with_environment(node_command cmd) {
  slurm_node_defaults d;
  try {
    d = slurm_node_defaults_of([](const char* name) { return std::getenv(name); });
  } catch (const std::invalid_argument& e) {
    throw job_error({e.what()});
  }
  if (cmd.join.empty())
    cmd.join = d.join;
  if (cmd.join.empty())
    throw job_error(
        {"--join HOST:PORT is required (or TROUPE_JOIN, or inside a Slurm job "
         "TROUPE_PORT: the coordinator on the job's first host)"});
  if (cmd.name.empty())
    cmd.name = d.name;
  if (cmd.listen.empty())
    cmd.listen = d.listen.empty() ? "127.0.0.1" : d.listen;
  if (cmd.threads == 0)
    cmd.threads = d.threads;
  return cmd;
}

// The options every node this command starts shares (all but its name and TLS files); throws
// job_error for a bad address, token file or exposure.
node_options shared_options_of(const node_command& cmd) {
  node_options o;
  o.coordinator = parse_host_port(cmd.join, "127.0.0.1", "--join");
  // Port 0 asks a listener for any port; to join it names none (a node waited for ever).
  if (o.coordinator.port == 0)
    throw job_error({"--join " + cmd.join +
                     ": port 0 names no coordinator (troupe coordinator "
                     "prints the port it listens on)"});
  o.token = load_token(cmd.token_file);
  if (const auto p = exposure_problem("--listen " + cmd.listen, cmd.listen, !cmd.tls_dir.empty(),
                                      cmd.insecure);
      !p.empty())
    throw job_error({p});
  o.threads = cmd.threads > 0 ? cmd.threads
                              : std::max<int64_t>(1, std::thread::hardware_concurrency() /
                                                         std::max<int64_t>(1, cmd.processes));
  o.peer_host = cmd.listen;
  o.connect_timeout_s = cmd.connect_timeout_s;
  if (!cmd.claim_version.empty())
    o.version = cmd.claim_version;
  o.log = [](const std::string& line) { print_to_terminal(stderr, "{}\n", line); };
  return o;
}

// HOSTNAME-PID within the node name rule (core/cluster/join_check): a host name is letters,
// digits, '-' and '.' (RFC 1123); anything else in it becomes '-'.
std::string default_node_name() {
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  std::string name = host;
  for (char& c : name)
    if (!is_name_char(c))
      c = '-';
  if (name.empty() || !std::isalnum(static_cast<unsigned char>(name.front())))
    name = "node" + name;
  return fmt::format("{}-{}", name.substr(0, 64), ::getpid());
}

// The options of each node this command starts: NAME, or NAME-0 .. NAME-(K-1) under
// --processes K, the numbers zero-padded to one width so that the names sort as the numbers do
// (the coordinator places ranks on nodes in their names' order), NAME defaulting to
// HOSTNAME-PID. Throws job_error as shared_options_of, or for missing TLS files.
std::vector<node_options> nodes_of(const node_command& cmd) {
  if (!cmd.tls_dir.empty() && cmd.name.empty())
    throw job_error({"--tls " + cmd.tls_dir + " needs --name NAME: the node presents " +
                     cmd.tls_dir + "/NAME.pem, whose certificate names it"});
  const std::string base = cmd.name.empty() ? default_node_name() : cmd.name;
  const node_options shared = shared_options_of(cmd);
  const auto width = std::to_string(cmd.processes - 1).size();
  std::vector<node_options> nodes;
  for (int64_t i = 0; i < cmd.processes; ++i) {
    const auto name = cmd.processes == 1 ? base : fmt::format("{}-{:0{}}", base, i, width);
    if (const auto problem = node_name_problem(name); !problem.empty() && cmd.claim_name.empty())
      throw job_error({"--name: " + problem});
    node_options o = shared;
    if (!cmd.tls_dir.empty())
      o.tls = checked_tls_files(cmd.tls_dir, name);
    o.name = cmd.claim_name.empty() ? name : cmd.claim_name;
    nodes.push_back(std::move(o));
  }
  return nodes;
}

}  // namespace

namespace {

// Ctrl-C or SIGTERM: the node leaves the run (run_node), says so and exits 130; it printed
// "Terminated" and died mid-step (stop_request.hpp).
stop_request node_stop;

extern "C" void on_node_stop(int signal) {
  note_stop_signal(node_stop, signal, "\ntroupe node: stopped at once (a second interrupt)\n");
}

}  // namespace

int run_node_command(const node_command& given) {
  std::vector<node_options> nodes;
  try {
    nodes = nodes_of(with_environment(given));
  } catch (const job_error& e) {
    print_problems(stderr, e);
    return exit_usage;
  }
  for (auto& o : nodes)
    o.stop_requested = &node_stop.asked;
  // Before any fork: the nodes inherit the handler (the parent takes these signals with sigwait
  // while it watches them, node_processes).
  take_stop_signals(on_node_stop);
  std::size_t mine = 0;
  if (nodes.size() > 1) {  // checked once, above, for all of them; forked before any thread
    const forked_node f = fork_node_processes(
        static_cast<int64_t>(nodes.size()),
        [&](int64_t i) { return nodes[static_cast<std::size_t>(i)].name; }, nodes[0].log);
    if (!f.is_child)
      return f.status == 0 ? exit_ok : f.status == node_stopped ? exit_interrupted : exit_failed;
    mine = static_cast<std::size_t>(f.index);
  }
  const int status = run_node(nodes[mine]);
  return status == 0 ? exit_ok : status == node_stopped ? exit_interrupted : exit_failed;
}

}  // namespace troupe
