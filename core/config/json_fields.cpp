#include "core/config/json_fields.hpp"

#include <cmath>
#include <cstdint>
#include <sstream>

namespace troupe {
namespace {

std::string format_number(double x) {
  std::ostringstream out;
  out << x;
  return out.str();
}

bool is_integer(const nlohmann::json& v) {
  return v.is_number_integer() || v.is_number_unsigned();
}

std::string range_text(int64_t min, int64_t max) {
  if (max == INT64_MAX)
    return ">= " + std::to_string(min);
  return "in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
}

}  // namespace

std::string render_value(const nlohmann::json& value) {
  return value.dump();
}

object_reader::object_reader(const nlohmann::json& object, std::string path,
                             std::vector<std::string>& problems)
    : object_(object), path_(std::move(path)), problems_(problems), valid_(object.is_object()) {
  if (!valid_)
    problems_.push_back((path_.empty() ? std::string("/") : path_) + ": must be an object, got " +
                        render_value(object));
}

bool object_reader::has(const std::string& key) const {
  return valid_ && object_.contains(key);
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

void object_reader::mismatch(const std::string& key, const std::string& expected,
                             const nlohmann::json& got) {
  problem(key, "must be " + expected + ", got " + render_value(got));
}

void object_reader::integer(const std::string& key, int64_t& out, int64_t min, int64_t max) {
  const auto* v = get(key);
  if (v == nullptr)
    return;
  const auto expected = "an integer " + range_text(min, max);
  if (!is_integer(*v))
    return mismatch(key, expected, *v);
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return mismatch(key, expected, *v);
  const auto x = v->get<int64_t>();
  if (x < min || x > max)
    return mismatch(key, expected, *v);
  out = x;
}

void object_reader::optional_integer(const std::string& key, std::optional<int64_t>& out,
                                     int64_t min, int64_t max) {
  if (!has(key))
    return;
  int64_t x = min - 1;
  const auto before = problems_.size();
  integer(key, x, min, max);
  if (problems_.size() == before)
    out = x;
}

void object_reader::number(const std::string& key, double& out, double min, bool min_exclusive,
                           double max, bool max_exclusive) {
  const auto* v = get(key);
  if (v == nullptr)
    return;
  if (!v->is_number())
    return mismatch(key, "a number", *v);
  const double x = v->get<double>();
  const bool below = min_exclusive ? !(x > min) : !(x >= min);
  const bool above = max_exclusive ? !(x < max) : !(x <= max);
  if (below || above) {
    std::string expected;
    if (max == HUGE_VAL) {
      expected = std::string(min_exclusive ? "> " : ">= ") + format_number(min);
    } else {
      expected = std::string("in ") + (min_exclusive ? "(" : "[") + format_number(min) + ", " +
                 format_number(max) + (max_exclusive ? ")" : "]");
    }
    // "must be > 0, got -0.1" rather than "must be a number > 0": the type was right.
    return problem(key, "must be " + expected + ", got " + render_value(*v));
  }
  out = x;
}

void object_reader::boolean(const std::string& key, bool& out) {
  const auto* v = get(key);
  if (v == nullptr)
    return;
  if (!v->is_boolean())
    return mismatch(key, "true or false", *v);
  out = v->get<bool>();
}

std::optional<std::size_t> object_reader::choice(const std::string& key,
                                                 const std::vector<std::string>& choices) {
  const auto* v = get(key);
  if (v == nullptr)
    return std::nullopt;
  std::string list;
  for (const auto& c : choices)
    list += (list.empty() ? "\"" : ", \"") + c + "\"";
  if (v->is_string()) {
    const auto s = v->get<std::string>();
    for (std::size_t i = 0; i < choices.size(); ++i)
      if (choices[i] == s)
        return i;
  }
  mismatch(key, "one of " + list, *v);
  return std::nullopt;
}

void object_reader::string(const std::string& key, std::string& out,
                           bool (*valid_value)(const std::string&), const char* expected) {
  const auto* v = get(key);
  if (v == nullptr)
    return;
  if (!v->is_string() || !valid_value(v->get<std::string>()))
    return mismatch(key, expected, *v);
  out = v->get<std::string>();
}

void object_reader::integer_array(const std::string& key, std::vector<int64_t>& out, int64_t min,
                                  int64_t max, std::size_t min_size, std::size_t max_size) {
  const auto* v = get(key);
  if (v == nullptr)
    return;
  const auto expected = "an array of " + std::to_string(min_size) + " to " +
                        std::to_string(max_size) + " integers " + range_text(min, max);
  if (!v->is_array() || v->size() < min_size || v->size() > max_size)
    return mismatch(key, expected, *v);
  std::vector<int64_t> values;
  bool ok = true;
  for (std::size_t i = 0; i < v->size(); ++i) {
    const auto& e = (*v)[i];
    if (!is_integer(e) || e.get<int64_t>() < min || e.get<int64_t>() > max) {
      problem(key + "/" + std::to_string(i),
              "must be an integer " + range_text(min, max) + ", got " + render_value(e));
      ok = false;
    } else {
      values.push_back(e.get<int64_t>());
    }
  }
  if (ok)
    out = std::move(values);
}

void object_reader::number_array(const std::string& key, std::vector<double>& out, double min,
                                 double max_exclusive, std::size_t size) {
  const auto* v = get(key);
  if (v == nullptr)
    return;
  const auto range = "in [" + format_number(min) + ", " + format_number(max_exclusive) + ")";
  if (!v->is_array() || v->size() != size)
    return mismatch(key, "an array of " + std::to_string(size) + " numbers " + range, *v);
  std::vector<double> values;
  for (std::size_t i = 0; i < size; ++i) {
    const auto& e = (*v)[i];
    if (!e.is_number() || !(e.get<double>() >= min) || !(e.get<double>() < max_exclusive))
      return problem(key + "/" + std::to_string(i),
                     "must be a number " + range + ", got " + render_value(e));
    values.push_back(e.get<double>());
  }
  out = std::move(values);
}

object_reader object_reader::object(const std::string& key) {
  static const nlohmann::json empty_object = nlohmann::json::object();
  const auto* v = get(key);
  return object_reader(v != nullptr ? *v : empty_object, path_of(key), problems_);
}

void object_reader::finish(const std::vector<std::string>& known) {
  if (!valid_)
    return;
  std::string list;
  for (const auto& k : known)
    list += (list.empty() ? "" : ", ") + k;
  for (const auto& item : object_.items())
    if (seen_.count(item.key()) == 0)
      problem(item.key(), "unknown key (known here: " + list + ")");
}

}  // namespace troupe
