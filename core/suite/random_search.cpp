#include "core/suite/random_search.hpp"

#include "core/config/json_fields.hpp"

#include <fmt/format.h>

#include <cmath>
#include <random>

namespace troupe {
namespace {

const std::vector<std::string> kinds{"uniform", "log_uniform", "int", "choice"};

// [low, high] of a range axis; false (a problem added) when it is not two numbers low < high
// (integers for int, both > 0 for log_uniform).
bool read_range(const nlohmann::json& range, const std::string& where, search_axis& axis,
                std::vector<std::string>& problems) {
  const bool integers = axis.what == search_axis::kind::integer;
  const auto bad = [&](const std::string& what) {
    problems.push_back(where + ": " + what + ", got " + render_value(range));
    return false;
  };
  if (!range.is_array() || range.size() != 2 || !range[0].is_number() || !range[1].is_number())
    return bad(integers ? "must be [low, high], two integers" : "must be [low, high], two numbers");
  if (integers && (!range[0].is_number_integer() || !range[1].is_number_integer()))
    return bad("must be [low, high], two integers");
  // Past 2^53 a double holds no longer every integer: the draw could not reach them all. The
  // ends are compared as integers (as doubles, 2^53 + 1 rounded to 2^53 and passed).
  constexpr int64_t exact = int64_t{1} << 53;
  const auto beyond = [&](const nlohmann::json& end) {
    if (end.is_number_unsigned())
      return end.get<uint64_t>() > static_cast<uint64_t>(exact);
    const auto v = end.get<int64_t>();
    return v < -exact || v > exact;
  };
  if (integers && (beyond(range[0]) || beyond(range[1])))
    return bad("must lie within ±2^53 (9007199254740992)");
  axis.low = range[0].get<double>();
  axis.high = range[1].get<double>();
  if (!std::isfinite(axis.low) || !std::isfinite(axis.high) || !(axis.low < axis.high) ||
      !std::isfinite(axis.high - axis.low))
    return bad("must have low < high, both finite and their distance too");
  if (axis.what == search_axis::kind::log_uniform && axis.low <= 0)
    return bad("must have low > 0 (a log scale)");
  return true;
}

std::optional<search_axis> read_axis(const std::string& key, const nlohmann::json& spec,
                                     const std::string& where, std::vector<std::string>& problems) {
  if (!spec.is_object() || spec.size() != 1) {
    problems.push_back(where +
                       ": must be one of {\"uniform\": [low, high]}, {\"log_uniform\": [low, "
                       "high]}, {\"int\": [low, high]} or {\"choice\": [values]}, got " +
                       render_value(spec));
    return std::nullopt;
  }
  // The one kind and its argument (an iterator kept alive: items()'s proxies refer into it).
  const auto first = spec.begin();
  const std::string name = first.key();
  const auto& value = first.value();
  search_axis axis;
  axis.key = key;
  std::size_t k = 0;
  while (k < kinds.size() && kinds[k] != name)
    ++k;
  if (k == kinds.size()) {
    problems.push_back(where + "/" + pointer_token(name) +
                       ": unknown kind (known: uniform, log_uniform, int, choice)");
    return std::nullopt;
  }
  axis.what = static_cast<search_axis::kind>(k);
  if (axis.what == search_axis::kind::choice) {
    if (!value.is_array() || value.empty()) {
      problems.push_back(where + "/choice: must be a non-empty array of values, got " +
                         render_value(value));
      return std::nullopt;
    }
    axis.choices = value;
    return axis;
  }
  if (!read_range(value, where + "/" + pointer_token(name), axis, problems))
    return std::nullopt;
  return axis;
}

// A uniform double in [0, 1) from 53 random bits: the same on every standard library.
double unit(std::mt19937_64& bits) {
  return static_cast<double>(bits() >> 11) * 0x1.0p-53;
}

// x with 6 significant digits (what a job's name and the table show), kept in [low, high]:
// rounding alone stepped out of a narrow range (0.123457 from [0.1234564, 0.1234566]).
double six_digits(double x, double low, double high) {
  return std::clamp(std::stod(fmt::format("{:.6g}", x)), low, high);
}

nlohmann::json draw(const search_axis& a, std::mt19937_64& bits) {
  const double u = unit(bits);
  switch (a.what) {
    case search_axis::kind::uniform:
      return six_digits(a.low + u * (a.high - a.low), a.low, a.high);
    case search_axis::kind::log_uniform:
      return six_digits(std::exp(std::log(a.low) + u * (std::log(a.high) - std::log(a.low))), a.low,
                        a.high);
    case search_axis::kind::integer: {  // both ends within ±2^53 (read_range): no overflow
      const auto low = static_cast<int64_t>(a.low);
      const auto span = static_cast<int64_t>(a.high) - low + 1;
      return low + std::min(span - 1, static_cast<int64_t>(u * static_cast<double>(span)));
    }
    case search_axis::kind::choice: {
      const auto n = a.choices.size();
      return a.choices[std::min(n - 1, static_cast<std::size_t>(u * static_cast<double>(n)))];
    }
  }
  return nullptr;
}

}  // namespace

std::optional<search_space> read_search(const nlohmann::json& file, int64_t max_trials,
                                        std::vector<std::string>& problems) {
  if (!file.is_object() || !file.contains("search"))
    return std::nullopt;
  const auto before = problems.size();
  object_reader r(file["search"], "/search", problems);
  search_space space;
  r.integer("trials", space.trials, 1, max_trials);
  int64_t seed = 0;  // the suite's own seed when the search gives none
  if (file.contains("seed") && file["seed"].is_number_integer() && file["seed"].get<int64_t>() >= 0)
    seed = file["seed"].get<int64_t>();
  r.integer("seed", seed, 0, INT64_MAX);
  space.seed = static_cast<uint64_t>(seed);
  if (r.valid() && !r.has("trials"))
    r.problem("trials", "is required: how many trials to draw");
  const auto* spec = r.peek("space");
  r.skip("space");
  r.finish({"trials", "seed", "space"});
  if (!r.valid())
    return std::nullopt;
  if (spec == nullptr || !spec->is_object() || spec->empty()) {
    problems.push_back(
        "/search/space: must be a non-empty object of \"dotted.key\": "
        "{\"uniform\" | \"log_uniform\" | \"int\": [low, high]} or "
        "{\"choice\": [values]}, got " +
        render_value(spec == nullptr ? nlohmann::json() : *spec));
    return std::nullopt;
  }
  for (const auto& [key, axis] : spec->items())
    if (auto a = read_axis(key, axis, "/search/space/" + pointer_token(key), problems))
      space.axes.push_back(std::move(*a));
  if (problems.size() != before)
    return std::nullopt;
  return space;
}

std::vector<search_trial> draw_trials(const search_space& space) {
  std::mt19937_64 bits(space.seed);
  std::vector<search_trial> trials;
  for (int64_t t = 0; t < space.trials; ++t) {
    search_trial trial;
    for (const auto& axis : space.axes)
      trial.emplace_back(axis.key, draw(axis, bits));
    trials.push_back(std::move(trial));
  }
  return trials;
}

}  // namespace troupe
