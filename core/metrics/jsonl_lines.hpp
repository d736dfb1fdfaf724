// metrics.jsonl read while it grows: text arrives in pieces and its last line may be cut in two.
// Each whole line is parsed and handed on; the start of a line whose newline has not arrived is
// kept until it does. The suite's live table, stop_losers and the report's followers read with it.
//
// Thread safety: none; one reader.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace troupe {

class jsonl_lines {
 public:
  /// Calls `on_record(const nlohmann::json&)` for each whole line that is a JSON object; returns
  /// how many whole lines were not.
  template <class F>
  int64_t feed(std::string_view text, F&& on_record) {
    partial_.append(text.data(), text.size());
    int64_t bad = 0;
    std::size_t start = 0;
    for (auto end = partial_.find('\n'); end != std::string::npos;
         end = partial_.find('\n', start)) {
      if (end > start) {
        const auto line = nlohmann::json::parse(
            partial_.begin() + static_cast<std::ptrdiff_t>(start),
            partial_.begin() + static_cast<std::ptrdiff_t>(end), nullptr, false);
        if (line.is_object())
          on_record(line);
        else
          ++bad;
      }
      start = end + 1;
    }
    partial_.erase(0, start);
    return bad;
  }

  /// Forgets a line begun (the file was rewritten from its start).
  void clear() { partial_.clear(); }

 private:
  std::string partial_;
};

}  // namespace troupe
