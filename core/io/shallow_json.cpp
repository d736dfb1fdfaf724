#include "core/io/shallow_json.hpp"

#include <string>

namespace troupe {

json_too_deep::json_too_deep()
    : std::runtime_error("nested deeper than " + std::to_string(max_json_depth) + " levels") {}

nlohmann::json parse_json_within_depth(std::string_view text) {
  const auto depth_limit = [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth >= max_json_depth)  // nlohmann counts the outermost level as 0
      throw json_too_deep();
    return true;
  };
  return nlohmann::json::parse(text.begin(), text.end(), depth_limit, /*allow_exceptions=*/false);
}

nlohmann::json parse_shallow_json(std::string_view text) {
  try {
    return parse_json_within_depth(text);
  } catch (const json_too_deep&) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

}  // namespace troupe
