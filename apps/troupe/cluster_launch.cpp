#include "apps/troupe/cluster_launch.hpp"

#include "apps/troupe/listen_socket.hpp"
#include "core/cluster/certs.hpp"
#include "core/cluster/token.hpp"
#include "core/errors.hpp"
#include "core/io/terminal_output.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <thread>

namespace troupe {
namespace {

std::string local_name(std::size_t i) {
  return "local-" + std::to_string(i);
}

// Why the coordinator could not listen on host:port, tried before anything runs: found when the
// run listened, a port in use failed the run (exit 1, a folder made) in CAF's words
// ("system_error(cannot_open_port, ...)"). "" when it can. Port 0 is tried too (the system
// picks one, and the run's own pick differs): what it proves is that the host is this machine's.
std::string listen_problem(const std::string& host, uint16_t port) {
  int bound = 0, error = 0;
  const int fd = open_listener(host, port, bound, error);
  if (fd >= 0) {
    ::close(fd);  // nothing has connected: the run's own acceptor binds it again at once
    return "";
  }
  if (error == 0)
    return "not an address of this machine";
  return error == EADDRINUSE ? "the port is in use (another program listens there)"
                             : std::string("cannot listen there: ") + std::strerror(error);
}

}  // namespace

std::string exposure_problem(const std::string& what, const std::string& host, bool tls,
                             bool insecure) {
  if (tls || is_loopback(host))
    return "";
  if (!insecure)
    return what +
           ": other machines can reach this address, so its connections need mutual TLS "
           "(--tls DIR; see troupe certs); --insecure accepts plain TCP anyway";
  print_to_terminal(
      stderr,
      "warning: {}: --insecure: plain TCP, no TLS: anyone on the network path can read "
      "and alter what troupe sends (the job, the weights, the gradients; the token itself "
      "never travels); keep this to a network you trust\n",
      what);
  return "";
}

tls_files checked_tls_files(const std::string& dir, const std::string& name) {
  const auto files = tls_files_in(dir, name);
  if (const auto problem = tls_files_problem(files, name); !problem.empty())
    throw job_error({"--tls " + dir + ": " + problem});
  return files;
}

cluster_options make_cluster_options(const run_command& cmd) {
  cluster_options o;
  o.log = [](const std::string& line) { print_to_terminal(stderr, "coordinator: {}\n", line); };
  if (cmd.local_nodes > 0) {  // the token and TLS come from local_nodes::attach
    o.listen = {"127.0.0.1", 0};
    return o;
  }
  o.listen = parse_host_port(cmd.listen, "127.0.0.1", "--listen");
  o.token = load_token(cmd.token_file);
  if (!cmd.tls_dir.empty())
    o.tls = checked_tls_files(cmd.tls_dir, coordinator_name);
  std::vector<std::string> problems;
  if (o.token.empty() && !is_loopback(o.listen.host))
    problems.push_back("--listen " + cmd.listen +
                       ": a coordinator reachable from other machines needs a token "
                       "(--token-file FILE or TROUPE_TOKEN); without one anyone could join");
  if (auto p = exposure_problem("--listen " + cmd.listen, o.listen.host, o.tls.has_value(),
                                cmd.insecure);
      !p.empty())
    problems.push_back(p);
  if (auto p = listen_problem(o.listen.host, o.listen.port); !p.empty())
    problems.push_back("--listen " + cmd.listen + ": " + p);
  if (!problems.empty())
    throw job_error(problems);
  return o;
}

local_nodes::local_nodes(int64_t count, std::string log_dir, bool tls)
    : count_(count), log_dir_(std::move(log_dir)) {
  std::random_device random;
  for (int i = 0; i < 4; ++i)
    token_ += fmt::format("{:08x}", random());
  if (!tls)
    return;
  // Private (0700: no other user can plant files there), and gone with this process however it
  // ends (with the next local cluster's start where it was killed).
  tls_folder_ = std::make_unique<owned_temp_folder>("troupe-tls");
  tls_dir_ = tls_folder_->path();
  make_authority(tls_dir_, 30);
  issue_certificate(tls_dir_, coordinator_name, 30);
  for (int64_t i = 0; i < count_; ++i)
    issue_certificate(tls_dir_, local_name(static_cast<std::size_t>(i)), 30);
  std::filesystem::remove(tls_dir_ + "/ca.key");  // nothing more to sign: nothing to steal
}

void local_nodes::attach(cluster_options& cluster) {
  cluster.token = token_;
  if (!tls_dir_.empty())
    cluster.tls = tls_files_in(tls_dir_, coordinator_name);
  cluster.on_listening = [this](uint16_t port) { start(port); };
  cluster.on_ended = [this](const std::vector<std::string>& told) { stop_untold(told); };
  cluster.joins_impossible = [this] { return exited_node(); };
}

// A node that exited while the coordinator waits for them all (no temporary folder, no
// descriptors left): the wait would last the whole join_timeout_s, its reason only in its log.
std::string local_nodes::exited_node() {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (const auto exit = nodes_[i]->poll()) {
      const auto log = log_dir_ + "/" + local_name(i) + ".log";
      const auto last = last_log_line(log);
      return fmt::format("local node {} ended ({}) before the run began{} (its log: {})",
                         local_name(i), exit->describe(), last.empty() ? "" : ": " + last, log);
    }
  return "";
}

void local_nodes::start(uint16_t port) {
  std::filesystem::create_directories(log_dir_);
  // The environment, not the command line: `ps` shows every process's arguments.
  ::setenv(token_variable, token_.c_str(), 1);
  const auto exe = self_executable();
  const auto threads =
      std::max<unsigned>(1, std::thread::hardware_concurrency()) / static_cast<unsigned>(count_);
  for (int64_t i = 0; i < count_; ++i) {
    const auto name = local_name(static_cast<std::size_t>(i));
    std::vector<std::string> argv{
        exe,      "node", "--join",    "127.0.0.1:" + std::to_string(port),
        "--name", name,   "--threads", std::to_string(std::max(1u, threads))};
    if (!tls_dir_.empty())
      argv.insert(argv.end(), {"--tls", tls_dir_});
    nodes_.push_back(std::make_unique<child_process>(argv, log_dir_ + "/" + name + ".log"));
  }
  ::unsetenv(token_variable);
}

// Nodes the coordinator never told (they had not joined when the run ended, e.g. on Ctrl-C
// while it waited for them) would keep trying to reach it: they are stopped now.
void local_nodes::stop_untold(const std::vector<std::string>& told) {
  for (std::size_t i = 0; i < nodes_.size(); ++i)
    if (std::find(told.begin(), told.end(), local_name(i)) == told.end() && !nodes_[i]->poll()) {
      print_to_terminal(stderr, "coordinator: stopping local node {}, which never joined\n",
                        local_name(i));
      nodes_[i]->send(SIGTERM);
    }
}

local_nodes::~local_nodes() {
  // Nodes leave on their own once the coordinator says the run is over.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (auto& n : nodes_)
    while (!n->poll() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  nodes_.clear();  // kills and reaps any that did not
  tls_folder_.reset();
}

}  // namespace troupe
