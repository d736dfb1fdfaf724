#include "core/io/terminal_output.hpp"

namespace troupe {

void write_to_terminal(std::FILE* out, std::string_view text) noexcept {
  if (std::fwrite(text.data(), 1, text.size(), out) != text.size() || std::fflush(out) != 0)
    std::clearerr(out);  // the next line tries again: a terminal that comes back gets it
}

}  // namespace troupe
