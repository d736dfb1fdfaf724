// What a suite's jobs are called: by the settings that tell them apart ("cnn-lr=0.05,seed=2"),
// so that a folder, a log and a leaderboard row say what the job is without a look at its
// spec. A job whose settings cannot be spelled in a name (an object, a string with other
// characters, a name over 64 characters) or whose name another job would share is numbered
// instead ("cnn-7"), as every job was before.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

/// One job's swept and searched settings: dotted key -> value, in the sweep's key order.
using setting_values = std::vector<std::pair<std::string, nlohmann::json>>;

/// How each key shows in names: its last part ("optimizer.lr" -> "lr") unless another key of
/// `keys` ends the same way ("optimizer.lr" and "schedule.lr" keep their whole keys).
std::map<std::string, std::string> short_keys(const std::vector<std::string>& keys);

/// "lr=0.05,seed=2": numbers in at most 4 significant digits, lists of numbers joined by "x"
/// ("hidden=256x128"); nullopt when a value cannot be spelled with A-Z a-z 0-9 _ . -.
std::optional<std::string> settings_text(const setting_values& values,
                                         const std::map<std::string, std::string>& keys);

/// Each job's name: `wanted[i]` where it is set, at most 64 characters, and no other job's
/// wanted name or fallback; else `fallback[i]` (which the caller makes unique).
std::vector<std::string> pick_job_names(const std::vector<std::optional<std::string>>& wanted,
                                        const std::vector<std::string>& fallback);

}  // namespace troupe
