// The names a job file gives enum values, in enum order: the one table that parsing
// (read_enum) and printing (to_string in job_config.hpp) both use. Internal to core/config.
#pragma once

#include "core/config/json_fields.hpp"

#include <initializer_list>
#include <string>
#include <vector>

namespace troupe {

extern const std::vector<std::string> model_names;
extern const std::vector<std::string> activation_names;
extern const std::vector<std::string> data_names;
extern const std::vector<std::string> optimizer_names;
extern const std::vector<std::string> policy_names;
extern const std::vector<std::string> compression_names;
extern const std::vector<std::string> schedule_names;
extern const std::vector<std::string> lr_schedule_names;
extern const std::vector<std::string> monitor_names;
extern const std::vector<std::string> loss_names;
extern const std::vector<std::string> precision_names;

/// False when the value was bad (and reported); a missing key keeps the default.
template <class Enum>
bool read_enum(object_reader& r, const std::string& key, const std::vector<std::string>& names,
               Enum& out) {
  if (!r.has(key))
    return true;
  const auto i = r.choice(key, names);
  if (i)
    out = static_cast<Enum>(*i);
  return i.has_value();
}

/// With a bad type, the keys that only some types take can be neither checked nor called
/// unknown: the bad type is the one problem worth reporting.
inline void skip_all(object_reader& r, std::initializer_list<const char*> keys) {
  for (const char* key : keys)
    r.skip(key);
}

}  // namespace troupe
