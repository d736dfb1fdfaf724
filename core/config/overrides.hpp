// The command line's `--set PATH=VALUE`: changes one key of a job's JSON before validation.
// PATH is dot-separated keys (a non-negative integer segment indexes an existing array);
// VALUE is parsed as JSON when it parses, and taken as a plain string otherwise (unless it
// begins with '{' or '[': then it must be JSON, and a typo in it is named). It is applied
// as a JSON merge patch (RFC 7386), the rule a suite's `jobs` entries follow: an object merges
// into the object at PATH (keys it leaves out stay), null removes the key, anything else
// replaces. A training length (training.steps or training.epochs) replaces the other one.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace troupe {

/// Throws job_error with one problem naming the assignment (`--set a.b=1: ...`) for a missing
/// '=', an empty path or key, an index out of range, or a path through a scalar. Missing
/// objects along the path are created; an unknown key is left for validation to report.
void apply_override(nlohmann::json& job, const std::string& assignment);

}  // namespace troupe
