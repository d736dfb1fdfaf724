// What the job tests ask of a rejected input: the list of problems a parser reported.
#pragma once

#include "core/errors.hpp"

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

}  // namespace troupe::test
