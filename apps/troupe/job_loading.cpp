#include "apps/troupe/job_loading.hpp"

#include "core/config/overrides.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace troupe {
namespace {

// "a.b=1" -> "/a/b": the JSON pointer an assignment writes to.
std::string pointer_of(const std::string& assignment) {
  std::string pointer = "/" + assignment.substr(0, assignment.find('='));
  std::replace(pointer.begin(), pointer.end(), '.', '/');
  return pointer;
}

}  // namespace

std::string blamed_source(const job_source& source, const std::string& problem) {
  const auto at = problem.substr(0, problem.find(": "));
  // The last --set that wrote the key, or an object holding it, is where the user looks.
  for (auto s = source.sets.rbegin(); s != source.sets.rend(); ++s) {
    const auto pointer = pointer_of(*s);
    if (at == pointer || at.rfind(pointer + "/", 0) == 0)
      return "--set " + *s;
  }
  return source.path;
}

nlohmann::json load_job_json(const job_source& source) {
  auto json = read_json_file(source.path);
  apply_overrides(json, source.sets);
  return json;
}

void apply_overrides(nlohmann::json& json, const std::vector<std::string>& sets) {
  std::vector<std::string> problems;
  for (const auto& assignment : sets) {
    try {
      apply_override(json, assignment);
    } catch (const job_error& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }
  if (!problems.empty())
    throw job_error(std::move(problems));
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
      named.push_back(blamed_source(source, p) + ": " + p);
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
