// JSON troupe reads from files a user writes or can edit (job and suite files, --set values, a
// run's summary.json and metrics.jsonl): parsed as nlohmann parses it, but nested at most
// max_json_depth levels. Copying, comparing or walking a JSON value recurses once per level:
// 200,000 nested arrays in a suite's sweep, or in a summary.json given to `troupe report`,
// overflowed the stack (a segmentation fault). A job is a few levels deep.
#pragma once

#include <nlohmann/json.hpp>

#include <string_view>

namespace troupe {

constexpr int max_json_depth = 64;

/// `text` parsed, or a discarded value (is_discarded()) where it is not JSON or is nested
/// deeper than max_json_depth levels.
nlohmann::json parse_shallow_json(std::string_view text);

}  // namespace troupe
