// `troupe node --join HOST:PORT`: joins a coordinator and trains the replicas it places here.
#include "actors/cluster/run_node.hpp"
#include "apps/troupe/cluster_launch.hpp"
#include "apps/troupe/commands.hpp"
#include "apps/troupe/job_loading.hpp"
#include "core/cluster/slurm_env.hpp"
#include "core/cluster/token.hpp"
#include "core/errors.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdlib>
#include <thread>

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

// The options; throws job_error for a bad address, token file, TLS files or exposure.
node_options node_options_of(const node_command& cmd) {
  node_options o;
  o.coordinator = parse_host_port(cmd.join, "127.0.0.1", "--join");
  o.token = load_token(cmd.token_file);
  if (!cmd.tls_dir.empty() && cmd.name.empty())
    throw job_error({"--tls " + cmd.tls_dir + " needs --name NAME: the node presents " +
                     cmd.tls_dir + "/NAME.pem, whose certificate names it"});
  if (!cmd.tls_dir.empty())
    o.tls = checked_tls_files(cmd.tls_dir, cmd.name);
  if (const auto p =
          exposure_problem("--listen " + cmd.listen, cmd.listen, o.tls.has_value(), cmd.insecure);
      !p.empty())
    throw job_error({p});
  if (cmd.name.empty()) {
    char host[256] = {};
    ::gethostname(host, sizeof(host) - 1);
    o.name = fmt::format("{}-{}", host, ::getpid());
  } else {
    o.name = cmd.claim_name.empty() ? cmd.name : cmd.claim_name;
  }
  return o;
}

}  // namespace

int run_node_command(const node_command& given) {
  node_options o;
  node_command cmd;
  try {
    cmd = with_environment(given);
    o = node_options_of(cmd);
  } catch (const job_error& e) {
    print_problems(stderr, e);
    return exit_usage;
  }
  o.threads =
      cmd.threads > 0 ? cmd.threads : std::max<int64_t>(1, std::thread::hardware_concurrency());
  o.peer_host = cmd.listen;
  o.connect_timeout_s = cmd.connect_timeout_s;
  if (!cmd.claim_version.empty())
    o.version = cmd.claim_version;
  o.log = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  return run_node(o) == 0 ? exit_ok : exit_failed;
}

}  // namespace troupe
