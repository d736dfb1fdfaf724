// The plan as it travels to the nodes of a run: JSON of every decision the coordinator made,
// and its SHA-256. A node decodes the plan it is sent instead of planning again (its machine
// may differ: other cores, no GPU, the model file elsewhere), so every process of a run reads
// the same decisions. The digest catches a plan that changed on the way or that this build
// reads differently from the coordinator's (two troupe versions in one run).
//
// Thread safety: pure functions.
#pragma once

#include "core/run/run_plan.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace troupe {

/// Every field of `plan`; the policy schedule is left out, as it is a function of the job's
/// parallelism and the step rules, which are in.
nlohmann::json plan_to_json(const run_plan& plan);

/// The plan plan_to_json wrote. Throws job_error naming the first field that is missing or of
/// the wrong type (the job inside is checked as parse_job checks a job file).
run_plan plan_from_json(const nlohmann::json& json);

/// SHA-256 (hex) of plan_to_json(plan) as text: equal plans, equal digests.
std::string plan_digest(const run_plan& plan);

}  // namespace troupe
