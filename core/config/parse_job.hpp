// Job file validation: JSON in, a job_config out, or a job_error listing every problem (path,
// value and what was expected). to_json() writes a config back with every default filled in;
// parse_job(to_json(c)) gives c again.
#pragma once

#include "core/io/shallow_json.hpp"  // max_json_depth
#include "core/job/job_config.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace troupe {

job_config parse_job(const nlohmann::json& job);

/// Whether `name` may name a job or a suite: it becomes a folder (runs/NAME-TIME, a suite's
/// DIR/NAME) and a word on a command line, so nothing a shell or a path reads specially.
bool valid_run_name(const std::string& name);
/// What valid_run_name wants, for messages.
inline constexpr const char* run_name_rule =
    "a name of 1 to 64 characters from A-Z a-z 0-9 _ . - = , (not . or ..)";

nlohmann::ordered_json to_json(const job_config& job);

/// Reads and parses a JSON file. Throws job_error naming the file: cannot open, invalid JSON
/// (with line and column), or a top level that is not an object.
nlohmann::json read_json_file(const std::string& path);

/// read_json_file's checks on text in memory; `name` (a file name) starts every message.
nlohmann::json parse_json_text(const std::string& text, const std::string& name);

}  // namespace troupe
