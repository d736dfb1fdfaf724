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

/// Getters do nothing for a missing key (the default already in `out` stays) and return false
/// exactly when they recorded a problem, so that checks across keys can skip bad values.
class object_reader {
 public:
  /// `path` is the object's JSON pointer ("" for the top level, shown as "/"). A non-object is
  /// reported once and every getter then does nothing.
  object_reader(const nlohmann::json& object, std::string path, std::vector<std::string>& problems);

  bool valid() const { return valid_; }
  bool has(const std::string& key) const;
  /// The value at `key` (null when missing), for keys that take more than one JSON type; it
  /// still counts as unread until a getter reads or skip() passes it.
  const nlohmann::json* peek(const std::string& key) const;
  std::string path_of(const std::string& key) const { return path_ + "/" + key; }
  /// Records "<path>/<key>: <what>".
  void problem(const std::string& key, const std::string& what);
  /// Records "<path>: <what>", about the object as a whole.
  void object_problem(const std::string& what);
  /// Marks a key as read without checking it: when a section's type is bad, its type-specific
  /// keys can be neither checked nor called unknown, and the bad type is problem enough.
  void skip(const std::string& key);

  /// An integer in [min, max]. A float (even 2.0) or a boolean is not an integer.
  bool integer(const std::string& key, int64_t& out, int64_t min, int64_t max);
  bool optional_integer(const std::string& key, std::optional<int64_t>& out, int64_t min,
                        int64_t max);
  /// A number (not a boolean) between min and max; `*_exclusive` makes that end open, e.g. lr
  /// must be > 0. Use HUGE_VAL for "no upper bound".
  bool number(const std::string& key, double& out, double min, bool min_exclusive, double max,
              bool max_exclusive);
  bool boolean(const std::string& key, bool& out);
  /// A string matching one of `choices`; returns its index, or nullopt (default kept) when the
  /// key is missing or bad. has() tells the two apart.
  std::optional<std::size_t> choice(const std::string& key,
                                    const std::vector<std::string>& choices);
  /// A string that `valid_value` accepts; `expected` describes it after "must be".
  bool string(const std::string& key, std::string& out, bool (*valid_value)(const std::string&),
              const char* expected);
  /// An array of min_size..max_size integers, each in [min, max]. Every bad element is reported
  /// at its own path ("/model/hidden/1"); `out` changes only when all of them are good.
  bool integer_array(const std::string& key, std::vector<int64_t>& out, int64_t min, int64_t max,
                     std::size_t min_size, std::size_t max_size);
  /// Either the string `word` (then `out` becomes empty) or an array of exactly `size`
  /// non-empty strings, e.g. a pipeline split: "balanced" or ["fc2", "out"].
  bool word_or_strings(const std::string& key, const std::string& word,
                       std::vector<std::string>& out, std::size_t size);
  /// One string or an array of 1..max_size strings, each accepted by `valid_value`; `out`
  /// becomes the list (one element for a lone string) only when every element is good.
  bool string_or_strings(const std::string& key, std::vector<std::string>& out,
                         bool (*valid_value)(const std::string&), const char* expected,
                         std::size_t max_size);
  /// An array of exactly `size` numbers, each in [min, max_exclusive) ((min, ...) when
  /// `min_exclusive`).
  bool number_array(const std::string& key, std::vector<double>& out, double min,
                    bool min_exclusive, double max_exclusive, std::size_t size);
  /// A nested object (an empty one when missing); its reader reports into the same list.
  object_reader object(const std::string& key);
  /// An array of min_size..max_size objects, a reader for each (none when missing or bad).
  std::vector<object_reader> object_array(const std::string& key, std::size_t min_size,
                                          std::size_t max_size);

  /// Reports every key that was neither read nor skipped as unknown, listing the known ones.
  void finish(const std::vector<std::string>& known);

 private:
  const nlohmann::json* get(const std::string& key);
  bool mismatch(const std::string& key, const std::string& expected, const nlohmann::json& got);

  const nlohmann::json& object_;
  std::string path_;
  std::vector<std::string>& problems_;
  bool valid_;
  std::set<std::string> seen_;
};

/// Compact JSON of a value, as shown after "got", cut after 120 characters (saying how long it
/// was). Never throws (invalid UTF-8 in a --set string is replaced), so reporting one problem
/// cannot raise another.
std::string render_value(const nlohmann::json& value);

/// A key as a message shows it: itself, or when it is very long its cut rendering.
std::string shown_key(const std::string& key);

/// A key as one step of a path in a message ("/data/KEY"): shown_key with "~" written "~0" and
/// "/" written "~1" (JSON Pointer, RFC 6901), so a key "a/b" is not read as "a" then "b".
std::string pointer_token(const std::string& key);

/// Whether `problems` has one at `path`, inside it, or at an object that contains it. A check
/// across sections skips fields already reported: it would compare against a default.
bool reported_at(const std::vector<std::string>& problems, const std::string& path);

}  // namespace troupe
