// Reads one JSON object of a job file while collecting problems instead of stopping at the
// first: each getter checks type and range, records "<JSON pointer>: <expected>, got <value>"
// on a mismatch and leaves the default in place; finish() reports the keys nobody asked for.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace troupe {

class object_reader {
 public:
  /// `path` is the object's JSON pointer ("" for the top level). A non-object is reported once
  /// and every getter then does nothing.
  object_reader(const nlohmann::json& object, std::string path, std::vector<std::string>& problems);

  bool valid() const { return valid_; }
  bool has(const std::string& key) const;
  std::string path_of(const std::string& key) const { return path_ + "/" + key; }
  void problem(const std::string& key, const std::string& what);

  void integer(const std::string& key, int64_t& out, int64_t min, int64_t max);
  void optional_integer(const std::string& key, std::optional<int64_t>& out, int64_t min,
                        int64_t max);
  /// `min_exclusive`: the value must be > min rather than >= min.
  void number(const std::string& key, double& out, double min, bool min_exclusive, double max,
              bool max_exclusive);
  void boolean(const std::string& key, bool& out);
  /// A string matching one of `choices`; returns its index (or nullopt, keeping the default).
  std::optional<std::size_t> choice(const std::string& key,
                                    const std::vector<std::string>& choices);
  void string(const std::string& key, std::string& out, bool (*valid_value)(const std::string&),
              const char* expected);
  /// An array of integers each in [min, max], with between min_size and max_size elements.
  void integer_array(const std::string& key, std::vector<int64_t>& out, int64_t min, int64_t max,
                     std::size_t min_size, std::size_t max_size);
  void number_array(const std::string& key, std::vector<double>& out, double min,
                    double max_exclusive, std::size_t size);
  /// A nested object; the returned reader reports into the same problem list.
  object_reader object(const std::string& key);

  /// Reports every key that was not read, listing the known ones.
  void finish(const std::vector<std::string>& known);

 private:
  const nlohmann::json* get(const std::string& key);
  void mismatch(const std::string& key, const std::string& expected, const nlohmann::json& got);

  const nlohmann::json& object_;
  std::string path_;
  std::vector<std::string>& problems_;
  bool valid_;
  std::set<std::string> seen_;
};

/// Compact JSON of a value, as shown after "got".
std::string render_value(const nlohmann::json& value);

}  // namespace troupe
