#include "apps/troupe/progress_printer.hpp"

#include "core/io/terminal_output.hpp"
#include "core/train/progress_line.hpp"

#include <fmt/format.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <string>

namespace troupe {
namespace {

// Terminal refresh and plain-log cadence: fast enough to feel live, slow enough not to flood.
constexpr auto terminal_interval = std::chrono::milliseconds(200);
constexpr auto log_interval = std::chrono::seconds(5);

}  // namespace

std::size_t terminal_width(std::FILE* out) {
  winsize size{};
  const int columns = ::ioctl(::fileno(out), TIOCGWINSZ, &size) == 0 ? size.ws_col : 0;
  return choose_width(columns, std::getenv("COLUMNS"));
}

progress_printer::progress_printer(std::FILE* out, bool quiet)
    : out_(out), quiet_(quiet), terminal_(::isatty(::fileno(out)) == 1) {}

void progress_printer::update(const progress_update& p) {
  if (quiet_)
    return;
  // Every update feeds the rate, shown or not: it is the rate over the last second of steps.
  const double rate = rate_.add(p.elapsed_s, p.samples).value_or(p.samples_per_s);
  const auto now = std::chrono::steady_clock::now();
  const auto interval = terminal_ ? std::chrono::steady_clock::duration(terminal_interval)
                                  : std::chrono::steady_clock::duration(log_interval);
  // Every evaluation is shown (the last one closes the run); steps only at the cadence.
  if (!p.evaluation && now - last_print_ < interval)
    return;
  last_print_ = now;
  if (terminal_) {
    const auto width = terminal_width(out_);
    const auto line = progress_line(p, rate, width);
    // Spaces rub out what a longer previous line left, up to the width and never past it.
    const auto pad = std::min(std::max(line.size(), shown_), width > 1 ? width - 1 : 1);
    print_to_terminal(out_, "\r{:<{}}", line, pad);
    shown_ = line.size();
    line_open_ = true;
  } else {
    print_to_terminal(out_, "{}\n", progress_line(p, rate, 0));
  }
}

void progress_printer::close() {
  if (line_open_)
    print_to_terminal(out_, "\n");
  line_open_ = false;
}

}  // namespace troupe
