// The subcommands for suites (job files with `jobs` or `sweep`): run_job and validate_job hand
// such files here.
#pragma once

#include "apps/troupe/commands.hpp"
#include "core/suite/suite_config.hpp"

#include <nlohmann/json.hpp>

namespace troupe {

int run_suite(const run_command& cmd, const job_source& source, const nlohmann::json& file);
int validate_suite(const job_source& source, const nlohmann::json& file);

}  // namespace troupe
