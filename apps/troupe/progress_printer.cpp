#include "apps/troupe/progress_printer.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cmath>
#include <string>

namespace troupe {
namespace {

// Terminal refresh and plain-log cadence: fast enough to feel live, slow enough not to flood.
constexpr auto terminal_interval = std::chrono::milliseconds(200);
constexpr auto log_interval = std::chrono::seconds(5);

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  const auto s = static_cast<long>(seconds + 0.5);
  return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
}

}  // namespace

progress_printer::progress_printer(std::FILE* out, bool quiet)
    : out_(out), quiet_(quiet), terminal_(::isatty(::fileno(out)) == 1) {}

void progress_printer::update(const progress_update& p) {
  if (quiet_)
    return;
  const auto now = std::chrono::steady_clock::now();
  const auto interval = terminal_ ? std::chrono::steady_clock::duration(terminal_interval)
                                  : std::chrono::steady_clock::duration(log_interval);
  // Every evaluation is shown (the last one closes the run); steps only at the cadence.
  if (!p.evaluation && now - last_print_ < interval)
    return;
  last_print_ = now;
  const double eta = p.step > 0 ? p.elapsed_s / static_cast<double>(p.step) *
                                      static_cast<double>(p.total_steps - p.step)
                                : NAN;
  auto line = fmt::format("epoch {} step {}/{} loss {:.4f} {:.0f} samples/s ETA {}", p.epoch + 1,
                          p.step, p.total_steps, p.loss, p.samples_per_s, format_duration(eta));
  if (p.accuracy)
    line += fmt::format(" {} acc {:.2f}%", p.validation ? "val" : "test", *p.accuracy * 100);
  if (terminal_) {
    fmt::print(out_, "\r{:<100}", line);
    line_open_ = true;
  } else {
    fmt::print(out_, "{}\n", line);
  }
  std::fflush(out_);
}

void progress_printer::close() {
  if (line_open_)
    fmt::print(out_, "\n");
  line_open_ = false;
  std::fflush(out_);
}

}  // namespace troupe
