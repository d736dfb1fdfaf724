// The troupe subcommands. Each returns the process exit status.
#pragma once

#include <string>
#include <vector>

namespace troupe {

/// Exit statuses, the same for every subcommand.
enum exit_status : int {
  exit_ok = 0,      ///< the command did what was asked
  exit_failed = 1,  ///< the run started but failed (a worker died, a data file is bad, ...)
  exit_usage = 2,   ///< bad job file or command line: nothing was run
};

struct job_source {
  std::string path;               ///< the job file
  std::vector<std::string> sets;  ///< --set PATH=VALUE, applied in order
};

struct run_command {
  job_source job;
  std::string out;  ///< empty: runs/NAME-TIMESTAMP
  bool force = false;
  bool quiet = false;
  /// `troupe coordinator`: HOST:PORT to wait for nodes on (empty: not a coordinator).
  std::string listen;
  /// `troupe run --local-nodes K`: start K node processes here and coordinate them.
  int64_t local_nodes = 0;
  std::string token_file;  ///< empty: the token comes from TROUPE_TOKEN, if set
};

struct node_command {
  std::string join;                  ///< HOST:PORT of the coordinator
  std::string name;                  ///< empty: HOSTNAME-PID
  int64_t threads = 0;               ///< 0: the hardware threads
  std::string listen = "127.0.0.1";  ///< where peers reach this node
  std::string token_file;
  double connect_timeout_s = 30;
  std::string claim_version;  ///< tests only: claim another troupe version
};

int run_job_command(const run_command& cmd);
int run_node_command(const node_command& cmd);
int validate_job(const job_source& job);

}  // namespace troupe
