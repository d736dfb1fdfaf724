#include "apps/troupe/job_loading.hpp"

#include "core/config/json_fields.hpp"
#include "core/config/overrides.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"
#include "core/io/shallow_json.hpp"
#include "core/io/terminal_output.hpp"

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

// Whether the assignment wrote the key at `at` (a JSON pointer): its own path, anything under a
// value that replaced what was there, or, since an object value merges, a key that value holds:
// --set 'training={"steps":5}' wrote /training/steps, not the file's /training/bogus.
bool wrote(const std::string& assignment, const std::string& at) {
  const auto pointer = pointer_of(assignment);
  if (at == pointer)
    return true;
  if (pointer.size() <= 1 || at.rfind(pointer + "/", 0) != 0)
    return false;
  nlohmann::json value;
  try {
    value = parse_json_within_depth(assignment.substr(assignment.find('=') + 1));
  } catch (const json_too_deep&) {
    return true;  // refused before it could be merged; never reached with a job to blame
  }
  const nlohmann::json* node = &value;
  std::size_t from = pointer.size() + 1;
  while (node->is_object() && from <= at.size()) {
    const auto to = std::min(at.find('/', from), at.size());
    const auto held = node->find(at.substr(from, to - from));
    if (held == node->end())
      return false;
    node = &*held;
    from = to + 1;
  }
  return true;
}

}  // namespace

std::string blamed_source(const job_source& source, const std::string& problem) {
  const auto colon = problem.find(": ");
  const auto at = problem.substr(0, colon);
  const auto said = colon == std::string::npos ? std::string() : problem.substr(colon + 2);
  const auto within = [&at](const std::string& pointer) {
    return !pointer.empty() && (at == pointer || at.rfind(pointer + "/", 0) == 0);
  };
  // The last --set that wrote the key, or an object holding it, or that made the object the
  // problem is in (--set nope.x=1: "/nope: unknown key"), is where the user looks; so is one
  // whose key a problem of the object above names ("/training: give clip_grad_norm or
  // clip_grad_value, not both").
  for (std::size_t i = source.sets.size(); i-- > 0;) {
    const auto pointer = pointer_of(source.sets[i]);
    const auto key = pointer.substr(pointer.rfind('/') + 1);
    const bool named_below =
        pointer.rfind(at + "/", 0) == 0 && !key.empty() && said.find(key) != std::string::npos;
    if (wrote(source.sets[i], at) || named_below ||
        (i < source.created.size() && within(source.created[i])))
      // A 100 kB --set is named by its start, as its value is.
      return i < source.labels.size() && !source.labels[i].empty()
                 ? source.labels[i]
                 : "--set " + shown_key(source.sets[i]);
  }
  return source.path;
}

job_error blamed(const job_source& source, const job_error& e) {
  std::vector<std::string> named;
  for (const auto& p : e.problems())
    named.push_back(p.rfind('/', 0) == 0 ? blamed_source(source, p) + ": " + p : p);
  return job_error(std::move(named));
}

nlohmann::json load_job_json(job_source& source) {
  auto json = read_json_file(source.path);
  source.created = apply_overrides(json, source.sets);
  return json;
}

namespace {

// The pointer of the first key along the assignment's path that `json` lacks, or "".
std::string first_missing(const nlohmann::json& json, const std::string& assignment) {
  const auto pointer = pointer_of(assignment);
  for (std::size_t end = 1; end <= pointer.size(); ++end) {
    if (end < pointer.size() && pointer[end] != '/')
      continue;
    const auto prefix = pointer.substr(0, end);
    try {
      if (!json.contains(nlohmann::json::json_pointer(prefix)))
        return prefix;
    } catch (const nlohmann::json::exception&) {
      return "";  // not a pointer JSON spells (an array index): apply_override names it
    }
  }
  return "";
}

}  // namespace

std::vector<std::string> apply_overrides(nlohmann::json& json,
                                         const std::vector<std::string>& sets) {
  std::vector<std::string> problems;
  std::vector<std::string> created;
  for (const auto& assignment : sets) {
    created.push_back(first_missing(json, assignment));
    try {
      apply_override(json, assignment);
    } catch (const job_error& e) {
      problems.insert(problems.end(), e.problems().begin(), e.problems().end());
    }
  }
  if (!problems.empty())
    throw job_error(std::move(problems));
  return created;
}

job_config load_job(job_source source) {
  const auto json = load_job_json(source);
  return parse_loaded_job(source, json);
}

run_plan plan_named(const job_source& source, const job_config& job, const data_facts& facts) {
  try {
    return make_run_plan(job, facts);
  } catch (const job_error& e) {
    throw blamed(source, e);
  }
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
      print_to_terminal(out, "error: {}\n", p);
    if (je->problems().size() > 1)
      print_to_terminal(out, "{} problems\n", je->problems().size());
  } else {
    print_to_terminal(out, "error: {}\n", e.what());
  }
}

}  // namespace troupe
