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
};

int run_job(const run_command& cmd);
int validate_job(const job_source& job);

}  // namespace troupe
