#include "core/train/progress_line.hpp"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>
#include <vector>

namespace troupe {
namespace {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0)
    return "?";
  const auto s = static_cast<long>(seconds + 0.5);
  return fmt::format("{}:{:02}:{:02}", s / 3600, (s / 60) % 60, s % 60);
}

}  // namespace

std::optional<double> rate_window::add(double elapsed_s, int64_t samples) {
  // A resumed or restarted count starts the window over.
  if (!points_.empty() && (samples < points_.back().second || elapsed_s < points_.back().first))
    points_.clear();
  points_.emplace_back(elapsed_s, samples);
  // Keep one point at least a window old, so the rate always spans the whole window.
  while (points_.size() > 2 && elapsed_s - points_[1].first >= window_s_)
    points_.pop_front();
  const auto& [t0, s0] = points_.front();
  if (elapsed_s <= t0)
    return std::nullopt;
  return static_cast<double>(samples - s0) / (elapsed_s - t0);
}

std::size_t choose_width(int ioctl_columns, const char* columns) {
  if (ioctl_columns > 0)
    return static_cast<std::size_t>(ioctl_columns);
  if (columns != nullptr) {
    char* end = nullptr;
    const long n = std::strtol(columns, &end, 10);
    if (end != columns && *end == '\0' && n > 0 && n < 100000)
      return static_cast<std::size_t>(n);
  }
  return 80;
}

std::string progress_line(const progress_update& p, double samples_per_s, std::size_t width) {
  const double eta = p.step > 0 ? p.elapsed_s / static_cast<double>(p.step) *
                                      static_cast<double>(p.total_steps - p.step)
                                : NAN;
  // In the order shown; `drop` ranks what goes first when the line is too long (0: kept).
  struct part {
    std::string text;
    int drop;
  };
  std::vector<part> parts{
      {fmt::format("epoch {}", p.epoch + 1), 1},
      {fmt::format("step {}/{}", p.step, p.total_steps), 0},
      {fmt::format("loss {:.4f}", p.loss), 0},
      {fmt::format("{:.0f} samples/s", samples_per_s), 3},
      {"ETA " + format_duration(eta), 2},
  };
  if (p.accuracy && p.metric == "accuracy")
    parts.push_back(
        {fmt::format("{} acc {:.2f}%", p.validation ? "val" : "test", *p.accuracy * 100), 0});
  else if (p.accuracy)
    parts.push_back(
        {fmt::format("{} {} {:.4g}", p.validation ? "val" : "test", p.metric, *p.accuracy), 0});
  const auto join = [&parts] {
    std::string line;
    for (const auto& x : parts)
      if (x.drop >= 0)
        line += (line.empty() ? "" : " ") + x.text;
    return line;
  };
  auto line = join();
  if (width == 0)
    return line;
  const std::size_t fit = width > 1 ? width - 1 : 1;
  for (int rank = 1; rank <= 3 && line.size() > fit; ++rank) {
    for (auto& x : parts)
      if (x.drop == rank)
        x.drop = -1;
    line = join();
  }
  if (line.size() > fit)
    line.resize(fit);
  return line;
}

}  // namespace troupe
