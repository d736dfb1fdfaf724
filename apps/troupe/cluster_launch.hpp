// What `troupe coordinator` and `troupe run --local-nodes` add to a run: the listening address,
// token and TLS rules, and the node processes of a local cluster.
#pragma once

#include "actors/cluster/run_cluster.hpp"
#include "apps/troupe/child_process.hpp"
#include "apps/troupe/commands.hpp"
#include "core/io/owned_temp_folder.hpp"

#include <memory>
#include <string>
#include <vector>

namespace troupe {

/// The coordinator side's options. Throws job_error for a bad --listen, an unreadable token
/// file, TLS files that cannot serve the coordinator, or a non-loopback address without a token
/// (anyone who can reach the port could join) or without TLS unless --insecure.
cluster_options make_cluster_options(const run_command& cmd);

/// Why a process may not listen on `host` (named `what`, e.g. "--listen 0.0.0.0:7000") as
/// asked, or "": an address other machines reach needs TLS, or --insecure, which prints a
/// warning to stderr instead.
std::string exposure_problem(const std::string& what, const std::string& host, bool tls,
                             bool insecure);

/// DIR/ca.pem, DIR/NAME.pem and DIR/NAME.key, checked (core/cluster/certs.hpp: readable, signed
/// by the CA, the key the certificate's, the certificate naming NAME); throws job_error.
tls_files checked_tls_files(const std::string& dir, const std::string& name);

/// K `troupe node` processes on this machine, joined to a coordinator on 127.0.0.1 with a token
/// made for this run (handed over in the environment) and, with `tls`, certificates of a CA made
/// for this run in a private temporary directory (its key deleted once they are issued). Their
/// output goes to DIR/nodes/NAME.log. None outlives the object: nodes the coordinator never
/// told are stopped when the run ends; the rest get a few seconds, then are killed.
class local_nodes {
 public:
  local_nodes(int64_t count, std::string log_dir, bool tls = false);
  ~local_nodes();
  local_nodes(const local_nodes&) = delete;
  local_nodes& operator=(const local_nodes&) = delete;
  /// Gives the coordinator the token and TLS files, and starts the nodes once it listens and
  /// stops the ones it never told once the run is over.
  void attach(cluster_options& cluster);

 private:
  void start(uint16_t port);
  void stop_untold(const std::vector<std::string>& told);
  std::string exited_node();

  int64_t count_;
  std::string log_dir_;
  std::string token_;
  std::unique_ptr<owned_temp_folder> tls_folder_;  ///< null without TLS
  std::string tls_dir_;                            ///< "" without TLS
  std::vector<std::unique_ptr<child_process>> nodes_;
};

}  // namespace troupe
