// object_reader: type and range checks of job file values, each failure recorded as one line
// "<JSON pointer>: must be <expected>, got <compact JSON>".
#include "core/config/json_fields.hpp"

#include "core/config/near_miss.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <sstream>

namespace troupe {
namespace {

constexpr int64_t int64_max = std::numeric_limits<int64_t>::max();
constexpr std::size_t size_max = std::numeric_limits<std::size_t>::max();
// How much of a value or key a message repeats.
constexpr std::size_t max_echo = 120;

// Bounds are round numbers; the default stream format keeps them short (0, 1, 1e-08).
std::string format_number(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

// The value when it is a JSON integer that fits int64_t. Booleans and floats (even 2.0) are not
// integers: "2.5 replicas" is a mistake that rounding would hide.
std::optional<int64_t> as_int64(const nlohmann::json& v) {
  if (v.is_number_unsigned()) {
    const auto u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(int64_max))
      return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_integer())
    return v.get<int64_t>();
  return std::nullopt;
}

// "an integer >= 0" reads better than "in [0, 9223372036854775807]", unless the value was beyond
// int64_t (an integer, or a float such as 1e19): then the bound it broke must be visible.
std::string integer_text(int64_t min, int64_t max, const nlohmann::json& got) {
  const bool too_large = (got.is_number_unsigned() && !as_int64(got)) ||
                         (got.is_number_float() && got.get<double>() >= 9.2233720368547758e18);
  if (max == int64_max && !too_large)
    return "an integer >= " + std::to_string(min);
  return "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

std::string number_text(double min, bool min_exclusive, double max, bool max_exclusive) {
  if (max == HUGE_VAL)
    return std::string(min_exclusive ? "> " : ">= ") + format_number(min);
  return std::string("in ") + (min_exclusive ? "(" : "[") + format_number(min) + ", " +
         format_number(max) + (max_exclusive ? ")" : "]");
}

bool in_range(double x, double min, bool min_exclusive, double max, bool max_exclusive) {
  const bool above_min = min_exclusive ? x > min : x >= min;
  const bool below_max = max_exclusive ? x < max : x <= max;
  return above_min && below_max;
}

std::string array_text(std::size_t min_size, std::size_t max_size, const std::string& what) {
  if (min_size == max_size)
    return "an array of exactly " + std::to_string(min_size) + " " + what;
  if (max_size == size_max) {
    if (min_size == 0)
      return "an array of " + what;
    if (min_size == 1)
      return "a non-empty array of " + what;
    return "an array of at least " + std::to_string(min_size) + " " + what;
  }
  return "an array of " + std::to_string(min_size) + " to " + std::to_string(max_size) + " " + what;
}

}  // namespace

std::string render_value(const nlohmann::json& value) {
  auto text = value.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  // A 50 MB value must not become a 50 MB message: its start says what it was, cut between
  // characters (a cut inside a UTF-8 sequence made the message invalid UTF-8), and its length
  // counts characters: a string's own (200 "é" said 402, its bytes and quotes), else the text's.
  if (text.size() > max_echo) {
    const auto characters = [](const std::string& s) {
      return std::count_if(s.begin(), s.end(), [](char c) {
        return (static_cast<unsigned char>(c) & 0xC0) != 0x80;  // not a continuation byte
      });
    };
    auto cut = max_echo;
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
      --cut;
    const auto length =
        value.is_string() ? characters(value.get_ref<const std::string&>()) : characters(text);
    text = text.substr(0, cut) + "... (" + std::to_string(length) + " characters)";
  }
  return text;
}

std::string shown_key(const std::string& key) {
  return key.size() <= max_echo ? key : render_value(key);
}

std::string pointer_token(const std::string& key) {
  std::string out;
  for (const char c : shown_key(key)) {
    if (c == '~')
      out += "~0";
    else if (c == '/')
      out += "~1";
    else
      out += c;
  }
  return out;
}

bool reported_at(const std::vector<std::string>& problems, const std::string& path) {
  auto within = [](const std::string& inner, const std::string& outer) {
    return inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 &&
           inner[outer.size()] == '/';
  };
  for (const auto& p : problems) {
    const auto at = p.substr(0, p.find(": "));
    if (at == path || at == "/" || within(path, at) || within(at, path))
      return true;
  }
  return false;
}

object_reader::object_reader(const nlohmann::json& object, std::string path,
                             std::vector<std::string>& problems)
    : object_(object), path_(std::move(path)), problems_(problems), valid_(object.is_object()) {
  if (!valid_)
    object_problem("must be an object, got " + render_value(object));
}

bool object_reader::has(const std::string& key) const {
  return valid_ && object_.contains(key);
}

const nlohmann::json* object_reader::peek(const std::string& key) const {
  if (!valid_)
    return nullptr;
  auto it = object_.find(key);
  return it == object_.end() ? nullptr : &*it;
}

const nlohmann::json* object_reader::get(const std::string& key) {
  if (!valid_)
    return nullptr;
  auto it = object_.find(key);
  if (it == object_.end())
    return nullptr;
  seen_.insert(key);
  return &*it;
}

void object_reader::problem(const std::string& key, const std::string& what) {
  problems_.push_back(path_of(key) + ": " + what);
}

void object_reader::object_problem(const std::string& what) {
  problems_.push_back((path_.empty() ? std::string("/") : path_) + ": " + what);
}

void object_reader::skip(const std::string& key) {
  if (has(key))
    seen_.insert(key);
}

bool object_reader::mismatch(const std::string& key, const std::string& expected,
                             const nlohmann::json& got) {
  problem(key, "must be " + expected + ", got " + render_value(got));
  return false;
}

bool object_reader::integer(const std::string& key, int64_t& out, int64_t min, int64_t max) {
  const auto* v = get(key);
  if (v == nullptr)
    return true;
  const auto x = as_int64(*v);
  if (!x || *x < min || *x > max)
    return mismatch(key, integer_text(min, max, *v), *v);
  out = *x;
  return true;
}

bool object_reader::optional_integer(const std::string& key, std::optional<int64_t>& out,
                                     int64_t min, int64_t max) {
  if (!has(key))
    return true;
  int64_t x = 0;
  if (!integer(key, x, min, max))
    return false;
  out = x;
  return true;
}

bool object_reader::number(const std::string& key, double& out, double min, bool min_exclusive,
                           double max, bool max_exclusive) {
  const auto* v = get(key);
  if (v == nullptr)
    return true;
  // is_number() is false for booleans, which nlohmann keeps apart from numbers.
  if (!v->is_number())
    return mismatch(key, "a number", *v);
  const double x = v->get<double>();
  // "must be > 0, got -0.1" rather than "must be a number > 0": the type was right.
  if (!in_range(x, min, min_exclusive, max, max_exclusive))
    return mismatch(key, number_text(min, min_exclusive, max, max_exclusive), *v);
  out = x;
  return true;
}

bool object_reader::boolean(const std::string& key, bool& out) {
  const auto* v = get(key);
  if (v == nullptr)
    return true;
  if (!v->is_boolean())
    return mismatch(key, "true or false", *v);
  out = v->get<bool>();
  return true;
}

std::optional<std::size_t> object_reader::choice(const std::string& key,
                                                 const std::vector<std::string>& choices) {
  const auto* v = get(key);
  if (v == nullptr)
    return std::nullopt;
  if (v->is_string()) {
    const auto s = v->get<std::string>();
    for (std::size_t i = 0; i < choices.size(); ++i)
      if (choices[i] == s)
        return i;
  }
  std::string list;
  for (const auto& c : choices)
    list += (list.empty() ? "\"" : ", \"") + c + "\"";
  mismatch(key, choices.size() == 1 ? list : "one of " + list, *v);
  return std::nullopt;
}

bool object_reader::string(const std::string& key, std::string& out,
                           bool (*valid_value)(const std::string&), const char* expected) {
  const auto* v = get(key);
  if (v == nullptr)
    return true;
  if (!v->is_string() || !valid_value(v->get<std::string>()))
    return mismatch(key, expected, *v);
  out = v->get<std::string>();
  return true;
}

bool object_reader::integer_array(const std::string& key, std::vector<int64_t>& out, int64_t min,
                                  int64_t max, std::size_t min_size, std::size_t max_size) {
  const auto* v = get(key);
  if (v == nullptr)
    return true;
  const auto range = "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!v->is_array() || v->size() < min_size || v->size() > max_size)
    return mismatch(key, array_text(min_size, max_size, "integers " + range), *v);
  std::vector<int64_t> values;
  bool ok = true;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const auto& e = (*v)[i];
    const auto x = as_int64(e);
    if (!x || *x < min || *x > max)
      ok = mismatch(key + "/" + std::to_string(i), integer_text(min, max, e), e);
    else
      values.push_back(*x);
  }
  if (ok)
    out = std::move(values);
  return ok;
}

bool object_reader::word_or_strings(const std::string& key, const std::string& word,
                                    std::vector<std::string>& out, std::size_t size) {
  const auto* v = get(key);
  if (v == nullptr)
    return true;
  const auto expected =
      "\"" + word + "\" or an array of " + std::to_string(size) + " name" + (size == 1 ? "" : "s");
  if (v->is_string() && v->get<std::string>() == word) {
    out.clear();
    return true;
  }
  if (!v->is_array() || v->size() != size)
    return mismatch(key, expected, *v);
  std::vector<std::string> values;
  bool ok = true;
  for (std::size_t i = 0; i < size; ++i) {
    const auto& e = (*v)[i];
    if (!e.is_string() || e.get<std::string>().empty())
      ok = mismatch(key + "/" + std::to_string(i), "a layer name", e);
    else
      values.push_back(e.get<std::string>());
  }
  if (ok)
    out = std::move(values);
  return ok;
}

bool object_reader::string_or_strings(const std::string& key, std::vector<std::string>& out,
                                      bool (*valid_value)(const std::string&), const char* expected,
                                      std::size_t max_size) {
  const auto* v = get(key);
  if (v == nullptr)
    return true;
  if (v->is_string()) {
    if (!valid_value(v->get<std::string>()))
      return mismatch(key, expected, *v);
    out = {v->get<std::string>()};
    return true;
  }
  if (!v->is_array() || v->empty() || v->size() > max_size)
    return mismatch(
        key,
        std::string(expected) + " or an array of 1 to " + std::to_string(max_size) + " of them",
        *v);
  std::vector<std::string> values;
  bool ok = true;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const auto& e = (*v)[i];
    if (!e.is_string() || !valid_value(e.get<std::string>()))
      ok = mismatch(key + "/" + std::to_string(i), expected, e);
    else
      values.push_back(e.get<std::string>());
  }
  if (ok)
    out = std::move(values);
  return ok;
}

bool object_reader::number_array(const std::string& key, std::vector<double>& out, double min,
                                 bool min_exclusive, double max_exclusive, std::size_t size) {
  const auto* v = get(key);
  if (v == nullptr)
    return true;
  const auto range = number_text(min, min_exclusive, max_exclusive, true);
  if (!v->is_array() || v->size() != size)
    return mismatch(key, array_text(size, size, "numbers " + range), *v);
  std::vector<double> values;
  bool ok = true;
  for (std::size_t i = 0; i < size; ++i) {
    const auto& e = (*v)[i];
    const auto at = key + "/" + std::to_string(i);
    if (!e.is_number())
      ok = mismatch(at, "a number", e);
    else if (!in_range(e.get<double>(), min, min_exclusive, max_exclusive, true))
      ok = mismatch(at, range, e);
    else
      values.push_back(e.get<double>());
  }
  if (ok)
    out = std::move(values);
  return ok;
}

object_reader object_reader::object(const std::string& key) {
  static const nlohmann::json empty_object = nlohmann::json::object();
  const auto* v = get(key);
  return object_reader(v != nullptr ? *v : empty_object, path_of(key), problems_);
}

std::vector<object_reader> object_reader::object_array(const std::string& key, std::size_t min_size,
                                                       std::size_t max_size) {
  std::vector<object_reader> readers;
  const auto* v = get(key);
  if (v == nullptr)
    return readers;
  if (!v->is_array() || v->size() < min_size || v->size() > max_size) {
    mismatch(
        key,
        "an array of " + std::to_string(min_size) + " to " + std::to_string(max_size) + " objects",
        *v);
    return readers;
  }
  for (std::size_t i = 0; i < v->size(); ++i)
    readers.emplace_back((*v)[i], path_of(key) + "/" + std::to_string(i), problems_);
  return readers;
}

void object_reader::finish(const std::vector<std::string>& known) {
  if (!valid_)
    return;
  std::string list;
  for (const auto& k : known)
    list += (list.empty() ? "" : ", ") + k;
  for (const auto& item : object_.items()) {
    if (seen_.count(item.key()) != 0)
      continue;
    const auto near = nearest_key(item.key(), known);
    problem(pointer_token(item.key()),
            "unknown key (" + (near ? "did you mean \"" + *near + "\"? " : std::string()) +
                "known: " + list + ")");
  }
}

}  // namespace troupe
