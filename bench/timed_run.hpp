// Times a troupe run the way every benchmark does: samples/s over the steps after `warmup`
// completed ones, up to `warmup + steps` (set-up and evaluations outside), with the run's report.
#pragma once

#include "actors/run_job.hpp"

#include <chrono>
#include <stdexcept>
#include <utility>

namespace troupe::bench {

struct timed_report {
  double samples_per_s = 0;
  run_report report;
};

/// Throws std::runtime_error with the run's error if it fails. `options`: metrics, checkpoints;
/// the progress callback is the timer's.
inline timed_report timed_run(const job_config& job, dataset_ptr data, int64_t warmup,
                              int64_t steps, run_options options = {}) {
  using clock_type = std::chrono::steady_clock;
  clock_type::time_point start, end;
  options.on_progress = [&](const progress_update& p) {
    if (p.evaluation)
      return;  // evaluations are outside the timed region
    if (p.step == warmup)
      start = clock_type::now();
    if (p.step == warmup + steps)
      end = clock_type::now();
  };
  timed_report r;
  r.report = plan_and_run(job, std::move(data), options);
  if (!r.report.succeeded())
    throw std::runtime_error(r.report.error);
  r.samples_per_s = static_cast<double>(steps * job.training.batch_size) /
                    std::chrono::duration<double>(end - start).count();
  return r;
}

}  // namespace troupe::bench
