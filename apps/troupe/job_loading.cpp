#include "apps/troupe/job_loading.hpp"

#include "core/config/overrides.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"

#include <fmt/format.h>

namespace troupe {

nlohmann::json load_job_json(const job_source& source) {
  auto json = read_json_file(source.path);
  std::vector<std::string> problems;
  for (const auto& assignment : source.sets) {
    try {
      apply_override(json, assignment);
    } catch (const job_error& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }
  if (!problems.empty())
    throw job_error(std::move(problems));
  return json;
}

job_config load_job(const job_source& source) {
  return parse_loaded_job(source, load_job_json(source));
}

job_config parse_loaded_job(const job_source& source, const nlohmann::json& json) {
  try {
    return parse_job(json);
  } catch (const job_error& e) {
    std::vector<std::string> named;
    for (const auto& p : e.problems())
      named.push_back(source.path + ": " + p);
    throw job_error(std::move(named));
  }
}

void print_problems(std::FILE* out, const std::exception& e) {
  if (const auto* je = dynamic_cast<const job_error*>(&e)) {
    for (const auto& p : je->problems())
      fmt::print(out, "error: {}\n", p);
    if (je->problems().size() > 1)
      fmt::print(out, "{} problems\n", je->problems().size());
  } else {
    fmt::print(out, "error: {}\n", e.what());
  }
}

}  // namespace troupe
