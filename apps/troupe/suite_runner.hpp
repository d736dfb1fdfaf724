// The suite runner's loop (cmd_suite.cpp sets it up and writes the results): starts each job
// the placement queue places as a child `troupe run`, samples the children against their
// limits, applies stop_losers, retries a crashed job from its checkpoint, and after Ctrl-C stops
// the running ones after their step.
#pragma once

#include "apps/troupe/child_process.hpp"
#include "apps/troupe/suite_display.hpp"
#include "apps/troupe/suite_watch.hpp"
#include "core/run/run_directory.hpp"
#include "core/suite/placement.hpp"
#include "core/suite/suite_config.hpp"
#include "core/suite/suite_results.hpp"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

using clock_type = std::chrono::steady_clock;

struct running_job {
  std::size_t index = 0;
  std::unique_ptr<child_process> child;
  clock_type::time_point started;
  std::optional<clock_type::time_point> kill_at;  ///< after a stop request
  std::string cause;                              ///< why the runner stopped it
  std::string log;                                ///< where its output goes
  bool lost = false;  ///< stopped by stop_losers: the job ends stopped, not failed
  int64_t attempts = 1;
};

// Everything the loop of run_suite works on.
struct suite_run {
  const suite_config& suite;
  const run_directory& dir;
  std::string program;
  bool force;  ///< --force: each job may reuse its folder, as the suite reuses its own
  std::vector<suite_job_result>& results;
  std::vector<running_job> running;
  loser_watch watch;
  suite_display& display;

  std::string metrics_of(std::size_t job) const {
    return dir.file(results[job].name + "/metrics.jsonl");
  }
};

/// Runs the jobs as the queue places them until all have ended, or, after Ctrl-C, until the
/// running ones have stopped.
void run_jobs(suite_run& s);
/// Whether Ctrl-C or SIGTERM stopped the suite's last run_jobs().
bool suite_was_interrupted();

}  // namespace troupe
