#include "apps/troupe/cluster_launch.hpp"

#include "core/cluster/token.hpp"
#include "core/errors.hpp"

#include <fmt/format.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

namespace troupe {

cluster_options make_cluster_options(const run_command& cmd) {
  cluster_options o;
  if (cmd.local_nodes > 0) {
    o.listen = {"127.0.0.1", 0};
  } else {
    o.listen = parse_host_port(cmd.listen, "127.0.0.1", "--listen");
    o.token = load_token(cmd.token_file);
    if (o.token.empty() && !is_loopback(o.listen.host))
      throw job_error({"--listen " + cmd.listen +
                       ": a coordinator reachable from other machines needs a token "
                       "(--token-file FILE or TROUPE_TOKEN); without one anyone could join"});
  }
  o.log = [](const std::string& line) { fmt::print(stderr, "coordinator: {}\n", line); };
  return o;
}

local_nodes::local_nodes(int64_t count, std::string log_dir)
    : count_(count), log_dir_(std::move(log_dir)) {
  std::random_device random;
  for (int i = 0; i < 4; ++i)
    token_ += fmt::format("{:08x}", random());
}

void local_nodes::start(uint16_t port) {
  std::filesystem::create_directories(log_dir_);
  // The environment, not the command line: `ps` shows every process's arguments.
  ::setenv(token_variable, token_.c_str(), 1);
  const auto exe = self_executable();
  const auto threads =
      std::max<unsigned>(1, std::thread::hardware_concurrency()) / static_cast<unsigned>(count_);
  for (int64_t i = 0; i < count_; ++i) {
    const auto name = "local-" + std::to_string(i);
    nodes_.push_back(std::make_unique<child_process>(
        std::vector<std::string>{exe, "node", "--join", "127.0.0.1:" + std::to_string(port),
                                 "--name", name, "--threads",
                                 std::to_string(std::max(1u, threads))},
        log_dir_ + "/" + name + ".log"));
  }
  ::unsetenv(token_variable);
}

local_nodes::~local_nodes() {
  // Nodes leave on their own once the coordinator says the run is over.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (auto& n : nodes_)
    while (!n->poll() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  nodes_.clear();  // kills and reaps any that did not
}

}  // namespace troupe
