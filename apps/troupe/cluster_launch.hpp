// What `troupe coordinator` and `troupe run --local-nodes` add to a run: the listening address
// and token rules, and the node processes of a local cluster.
#pragma once

#include "actors/run_cluster.hpp"
#include "apps/troupe/child_process.hpp"
#include "apps/troupe/commands.hpp"

#include <memory>
#include <string>
#include <vector>

namespace troupe {

/// The coordinator side's options. Throws job_error for a bad --listen, an unreadable token
/// file, or a non-loopback address without a token (anyone who can reach the port could join).
cluster_options make_cluster_options(const run_command& cmd);

/// K `troupe node` processes on this machine, joined to a coordinator on 127.0.0.1 with a token
/// made for this run (handed over in the environment). Their output goes to DIR/nodes/NAME.log.
/// None outlives the object: it waits a few seconds for them to exit, then kills them.
class local_nodes {
 public:
  local_nodes(int64_t count, std::string log_dir);
  ~local_nodes();
  /// The token the nodes will present.
  const std::string& token() const { return token_; }
  /// Starts the nodes once the coordinator listens on `port`.
  void start(uint16_t port);

 private:
  int64_t count_;
  std::string log_dir_;
  std::string token_;
  std::vector<std::unique_ptr<child_process>> nodes_;
};

}  // namespace troupe
