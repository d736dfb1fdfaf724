// JSON troupe reads from files a user writes or can edit (job and suite files, --set values, a
// run's summary.json and metrics.jsonl): parsed as nlohmann parses it, but nested at most
// max_json_depth levels. Copying, comparing or walking a JSON value recurses once per level:
// 200,000 nested arrays in a suite's sweep, or in a summary.json given to `troupe report`,
// overflowed the stack (a segmentation fault). A job is a few levels deep.
#pragma once

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string_view>

namespace troupe {

constexpr int max_json_depth = 64;

/// What parse_json_within_depth throws for a value nested too deep.
class json_too_deep : public std::runtime_error {
 public:
  json_too_deep();
};

/// `text` parsed, or a discarded value (is_discarded()) where it is not JSON; throws
/// json_too_deep where it is nested deeper than max_json_depth levels.
nlohmann::json parse_json_within_depth(std::string_view text);

/// The same, with a discarded value for both: for files where either is simply not troupe's.
nlohmann::json parse_shallow_json(std::string_view text);

}  // namespace troupe
