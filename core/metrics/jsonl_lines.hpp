// metrics.jsonl read while it grows: text arrives in pieces and its last line may be cut in two.
// Each whole line is parsed and handed on; the start of a line whose newline has not arrived is
// kept until it does, up to max_line_bytes: a longer one (no record troupe writes comes near;
// a file linked to /dev/zero or a forged line of gigabytes would) is dropped, counted as a line
// that held no record. The suite's live table, stop_losers and the report's followers read with
// it.
//
// Thread safety: none; one reader.
#pragma once

#include "core/io/shallow_json.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace troupe {

class jsonl_lines {
 public:
  /// The longest line kept while its end has not arrived.
  static constexpr std::size_t max_line_bytes = 1 << 20;

  /// Calls `on_record(const nlohmann::json&)` for each whole line that is a JSON object; returns
  /// how many whole lines were not.
  template <class F>
  int64_t feed(std::string_view text, F&& on_record) {
    if (dropping_) {  // the rest of a line too long to keep
      const auto end = text.find('\n');
      if (end == std::string_view::npos)
        return 0;
      text.remove_prefix(end + 1);
      dropping_ = false;
    }
    partial_.append(text.data(), text.size());
    int64_t bad = 0;
    std::size_t start = 0;
    for (auto end = partial_.find('\n'); end != std::string::npos;
         end = partial_.find('\n', start)) {
      if (end > start) {
        const auto line = parse_shallow_json(std::string_view(partial_).substr(start, end - start));
        if (line.is_object())
          on_record(line);
        else
          ++bad;
      }
      start = end + 1;
    }
    partial_.erase(0, start);
    if (partial_.size() > max_line_bytes) {
      partial_.clear();
      partial_.shrink_to_fit();
      dropping_ = true;
      ++bad;
    }
    return bad;
  }

  /// Forgets a line begun (the file was rewritten from its start).
  void clear() {
    partial_.clear();
    dropping_ = false;
  }

 private:
  std::string partial_;
  bool dropping_ = false;  ///< inside a line too long to keep, until its newline
};

}  // namespace troupe
