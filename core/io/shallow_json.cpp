#include "core/io/shallow_json.hpp"

namespace troupe {
namespace {

struct too_deep {};

}  // namespace

nlohmann::json parse_shallow_json(std::string_view text) {
  const auto depth_limit = [](int depth, nlohmann::json::parse_event_t, nlohmann::json&) {
    if (depth >= max_json_depth)  // nlohmann counts the outermost level as 0
      throw too_deep{};
    return true;
  };
  try {
    return nlohmann::json::parse(text.begin(), text.end(), depth_limit,
                                 /*allow_exceptions=*/false);
  } catch (const too_deep&) {
    return nlohmann::json(nlohmann::json::value_t::discarded);
  }
}

}  // namespace troupe
