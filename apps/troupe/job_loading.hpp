// Reads a job file, applies --set overrides and validates it into a job_config.
#pragma once

#include "apps/troupe/commands.hpp"
#include "core/errors.hpp"
#include "core/job/job_config.hpp"
#include "core/run/run_plan.hpp"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <string>
#include <vector>

namespace troupe {

/// The job file's JSON with the --set overrides applied (what they created noted in `source`);
/// throws job_error.
nlohmann::json load_job_json(job_source& source);

/// Applies --set assignments to `json` in order; throws job_error listing each that does not.
/// Returns job_source::created for them.
std::vector<std::string> apply_overrides(nlohmann::json& json,
                                         const std::vector<std::string>& sets);

/// Where a validation problem ("/optimizer/lrr: unknown key ...") came from: the last --set
/// that wrote that key or an object holding it ("--set optimizer.lrr=1"), or that made the
/// object the problem is in ("--set nope.x=1": "/nope: unknown key"), else the job file.
std::string blamed_source(const job_source& source, const std::string& problem);

/// `e`'s problems at a key ("/parallelism/stages: ..."), each prefixed with blamed_source.
job_error blamed(const job_source& source, const job_error& e);

/// make_run_plan, its refusals of keys ("/parallelism/stages: 64 stages, but ...") named as
/// blamed() names them (they had no origin at all).
run_plan plan_named(const job_source& source, const job_config& job, const data_facts& facts);

/// Validates what load_job_json read; throws job_error listing every problem, each prefixed
/// with where it came from (blamed_source).
job_config parse_loaded_job(const job_source& source, const nlohmann::json& json);

/// Both of the above.
job_config load_job(job_source source);

/// Prints a job_error's problems, one per line, to `out`.
void print_problems(std::FILE* out, const std::exception& e);

}  // namespace troupe
