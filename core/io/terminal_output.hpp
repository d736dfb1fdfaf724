// Lines for the person at the terminal (progress, logs, errors on stderr): written as well as
// the stream allows, never failing what is being done. A closed or full stderr, or a pipe whose
// reader left (`troupe run ... 2>&1 | head -1`), failed the run at its first progress line
// through fmt::print's exception, or ended troupe with it uncaught.
//
// Thread safety: as std::fwrite (each call writes its text in one piece).
#pragma once

#include <fmt/format.h>

#include <cstdio>
#include <string_view>
#include <utility>

namespace troupe {

/// Writes `text` to `out` and flushes it; a failure is ignored.
void write_to_terminal(std::FILE* out, std::string_view text) noexcept;

/// fmt::print(out, ...) that never throws for the stream.
template <class... Args>
void print_to_terminal(std::FILE* out, fmt::format_string<Args...> format, Args&&... args) {
  write_to_terminal(out, fmt::format(format, std::forward<Args>(args)...));
}

}  // namespace troupe
