// Counts read back from a checkpoint's state.json. troupe writes counts as JSON integers; a
// float where one stands (1e30, as a forged or hand-edited file may hold) converts to int64_t
// with undefined behaviour (a summary once showed -9223372036854775808), so it is refused, as a
// string there is, naming the field. Floats elsewhere (losses, times) are any size troupe wrote:
// a loss of 1e21 is a figure, not a forgery.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace troupe {

/// `j` as a count; throws std::runtime_error naming `name` where it is no whole number in
/// int64_t's range.
inline int64_t saved_count(const nlohmann::json& j, const std::string& name) {
  const bool fits = j.is_number_integer() &&
                    (!j.is_number_unsigned() || j.get<uint64_t>() <= uint64_t{INT64_MAX});
  if (!fits)
    throw std::runtime_error(name + ": " + (j.is_primitive() ? j.dump() : j.type_name()) +
                             " is not a count");
  return j.get<int64_t>();
}

/// A list of counts, each as saved_count.
inline std::vector<int64_t> saved_counts(const nlohmann::json& j, const std::string& name) {
  if (!j.is_array())
    throw std::runtime_error(name + ": " + j.type_name() + " is not a list of counts");
  std::vector<int64_t> out;
  for (std::size_t i = 0; i < j.size(); ++i)
    out.push_back(saved_count(j[i], name + "/" + std::to_string(i)));
  return out;
}

}  // namespace troupe
