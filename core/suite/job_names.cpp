#include "core/suite/job_names.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace troupe {
namespace {

constexpr std::size_t max_name_length = 64;  // as core/config/parse_job allows

bool spellable(const std::string& s) {
  if (s.empty())
    return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-')
      return false;
  return true;
}

std::optional<std::string> spelled(const nlohmann::json& value) {
  if (value.is_boolean())
    return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer())
    return value.dump();
  if (value.is_number_float()) {
    auto text = fmt::format("{:.4g}", value.get<double>());  // 1e+06 -> 1e06: no '+' in names
    text.erase(std::remove(text.begin(), text.end(), '+'), text.end());
    return text;
  }
  if (value.is_string() && spellable(value.get<std::string>()))
    return value.get<std::string>();
  if (value.is_array() && !value.empty()) {
    std::string joined;
    for (const auto& item : value) {
      if (!item.is_number())
        return std::nullopt;
      joined += (joined.empty() ? "" : "x") + *spelled(item);
    }
    return joined;
  }
  return std::nullopt;
}

std::string last_part(const std::string& key) {
  const auto dot = key.rfind('.');
  return dot == std::string::npos ? key : key.substr(dot + 1);
}

}  // namespace

std::map<std::string, std::string> short_keys(const std::vector<std::string>& keys) {
  std::map<std::string, int> uses;
  for (const auto& k : keys)
    ++uses[last_part(k)];
  std::map<std::string, std::string> shown;
  for (const auto& k : keys)
    shown[k] = uses[last_part(k)] == 1 ? last_part(k) : k;
  return shown;
}

std::optional<std::string> settings_text(const setting_values& values,
                                         const std::map<std::string, std::string>& keys) {
  std::string text;
  for (const auto& [key, value] : values) {
    const auto v = spelled(value);
    const auto k = keys.find(key);
    if (!v || k == keys.end())
      return std::nullopt;
    text += (text.empty() ? "" : ",") + k->second + "=" + *v;
  }
  return text.empty() ? std::nullopt : std::optional<std::string>(text);
}

std::vector<std::string> pick_job_names(const std::vector<std::optional<std::string>>& wanted,
                                        const std::vector<std::string>& fallback) {
  std::map<std::string, int> uses;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    ++uses[fallback[i]];
    if (wanted[i])
      ++uses[*wanted[i]];
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < wanted.size(); ++i) {
    const bool fits = wanted[i] && wanted[i]->size() <= max_name_length && uses[*wanted[i]] == 1;
    names.push_back(fits ? *wanted[i] : fallback[i]);
  }
  return names;
}

}  // namespace troupe
