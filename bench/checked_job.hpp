// A benchmark's job, checked as `troupe run` checks a job file.
#pragma once

#include "core/config/parse_job.hpp"
#include "core/errors.hpp"
#include "core/job/job_config.hpp"

#include <stdexcept>
#include <string>

namespace troupe::bench {

/// `job` as troupe would run it, or a std::runtime_error naming each rule its options break.
/// The benchmarks build their jobs from command-line options: without this, a value no job file
/// could hold (a global batch smaller than the replicas, a hidden width of 0) reached the
/// training code unchecked, as a crash or as a figure that measures nothing.
inline job_config checked_job(const job_config& job) {
  try {
    return parse_job(to_json(job));
  } catch (const job_error& e) {
    throw std::runtime_error("these options make a job troupe would refuse:\n" +
                             std::string(e.what()));
  }
}

}  // namespace troupe::bench
