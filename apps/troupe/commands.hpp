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
  /// Stopped by Ctrl-C or SIGTERM, as shells report SIGINT: the run stopped after a step, wrote
  /// its summary (and a checkpoint, where it keeps them) and can be resumed.
  exit_interrupted = 130,
};

struct job_source {
  std::string path;               ///< the job file
  std::vector<std::string> sets;  ///< --set PATH=VALUE, applied in order
  /// For each of `sets` once applied: the JSON pointer of the first key on its path the file did
  /// not have ("" where it had them all), so that a problem there is blamed on that --set.
  std::vector<std::string> created;
  /// What problems call each of `sets` ("" or absent: "--set PATH=VALUE"): a change the program
  /// made for an option is named after the option ("--local-nodes 2"), not a --set never given.
  std::vector<std::string> labels;
};

struct run_command {
  job_source job;  ///< empty path with `resume`: the job is the checkpoint's
  /// `--resume DIR`: continue the run in DIR from its newest checkpoint that verifies.
  std::string resume;
  std::string out;  ///< empty: runs/NAME-TIMESTAMP
  bool force = false;
  bool quiet = false;
  /// `troupe coordinator`: HOST:PORT to wait for nodes on (empty: not a coordinator).
  std::string listen;
  /// `troupe run --local-nodes K`: start K node processes here and coordinate them.
  int64_t local_nodes = 0;
  std::string token_file;  ///< empty: the token comes from TROUPE_TOKEN, if set
  /// `troupe coordinator --tls DIR`: mutual TLS with DIR/ca.pem and DIR/coordinator.{pem,key}.
  std::string tls_dir;
  /// `troupe run --local-nodes K --tls`: mutual TLS with a CA made for this run.
  bool local_tls = false;
  bool insecure = false;  ///< accept plain TCP on a non-loopback --listen (with a warning)
};

struct node_command {
  // Empty or 0: from the environment (core/cluster/slurm_env.hpp), else the default said.
  std::string join;       ///< HOST:PORT of the coordinator
  std::string name;       ///< empty: HOSTNAME-PID
  int64_t threads = 0;    ///< 0: the hardware threads (shared out among the processes)
  int64_t processes = 1;  ///< nodes started here, forked from one start (node_processes.hpp)
  std::string listen;     ///< where peers reach this node; empty: 127.0.0.1
  std::string token_file;
  double connect_timeout_s = 30;
  std::string claim_version;  ///< tests only: claim another troupe version
  std::string claim_name;     ///< tests only: join under another name than the certificate's
  std::string tls_dir;        ///< mutual TLS with DIR/ca.pem and DIR/NAME.{pem,key}
  bool insecure = false;      ///< accept plain TCP on a non-loopback --listen (with a warning)
};

/// `troupe certs init DIR` (make a CA) or `troupe certs issue DIR NAME`.
struct certs_command {
  std::string action;  ///< "init" or "issue"
  std::string dir;
  std::string name;  ///< issue only
};

/// `troupe report DIR [--serve HOST:PORT]`.
struct report_command {
  std::string folder;  ///< a run's or a suite's output folder
  std::string serve;   ///< empty: write DIR/report.html; else HOST:PORT, ":PORT" or "PORT"
};

int run_job_command(const run_command& cmd);
int run_report_command(const report_command& cmd);
int run_node_command(const node_command& cmd);
int run_certs_command(const certs_command& cmd);
int validate_job(job_source job);

}  // namespace troupe
