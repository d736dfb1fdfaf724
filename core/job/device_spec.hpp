// Where a worker computes: "cpu", "cuda:N" (one GPU) or "cuda" (any visible GPU, chosen when the
// run is planned). Pure strings and rules: which devices exist is device_inventory's business.
#pragma once

#include <iosfwd>
#include <optional>
#include <string>

namespace troupe {

struct device_spec {
  enum class kind_type { cpu, cuda };
  kind_type kind = kind_type::cpu;
  /// cuda only: the GPU's index; unset for "cuda", which placement resolves to one.
  std::optional<int> index;

  bool is_cuda() const { return kind == kind_type::cuda; }
  std::string str() const;
  friend bool operator==(const device_spec& a, const device_spec& b) {
    return a.kind == b.kind && a.index == b.index;
  }
  friend bool operator!=(const device_spec& a, const device_spec& b) { return !(a == b); }
};

/// Writes str(), for messages and test output.
std::ostream& operator<<(std::ostream& out, const device_spec& d);

/// "cpu", "cuda" or "cuda:N" (N a decimal below 1024, no sign, no spaces); nullopt otherwise.
std::optional<device_spec> parse_device(const std::string& text);

/// parse_device(text) succeeds: the predicate the JSON readers take.
inline bool is_device_name(const std::string& text) {
  return parse_device(text).has_value();
}

/// What a job file may say where a device is expected, after "must be".
inline constexpr const char* device_expected = "\"cpu\", \"cuda\" or \"cuda:N\"";

}  // namespace troupe
