// What the job tests ask of a rejected input: the list of problems a parser reported.
#pragma once

#include "core/config/parse_job.hpp"
#include "core/errors.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <initializer_list>

#include <string>
#include <vector>

namespace troupe::test {

/// The problems `parse(input)` reports as a job_error (empty if it accepts the input).
template <class Parse, class Input>
std::vector<std::string> problems_of(Parse parse, const Input& input) {
  try {
    parse(input);
  } catch (const job_error& e) {
    return e.problems();
  }
  return {};
}

/// True when some problem contains `fragment`.
inline bool any_contains(const std::vector<std::string>& problems, const std::string& fragment) {
  for (const auto& p : problems)
    if (p.find(fragment) != std::string::npos)
      return true;
  return false;
}

/// The problems parse_job reports for `j` (empty if it is valid).
inline std::vector<std::string> job_problems(const nlohmann::json& j) {
  return problems_of([](const nlohmann::json& x) { return parse_job(x); }, j);
}

/// The single problem of a job_error thrown by `f`.
template <class F>
std::string only_problem(F&& f) {
  try {
    f();
  } catch (const job_error& e) {
    REQUIRE(e.problems().size() == 1);
    return e.problems()[0];
  }
  FAIL("no job_error thrown");
  return {};
}

/// Exactly one problem of parse_job for `j`, containing every fragment.
inline void check_one_problem(const nlohmann::json& j,
                              std::initializer_list<const char*> fragments) {
  const auto p = job_problems(j);
  REQUIRE_MESSAGE(p.size() == 1, j.dump());
  for (const char* f : fragments)
    CHECK_MESSAGE(p[0].find(f) != std::string::npos, p[0], " lacks ", std::string(f));
}

}  // namespace troupe::test
