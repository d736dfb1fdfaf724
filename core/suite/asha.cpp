#include "core/suite/asha.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace troupe {

std::optional<double> quantile(std::vector<double> xs, double q) {
  if (xs.empty())
    return std::nullopt;
  std::sort(xs.begin(), xs.end());
  const double rank = q * static_cast<double>(xs.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(rank));
  const auto above = std::min(below + 1, xs.size() - 1);
  return xs[below] + (xs[above] - xs[below]) * (rank - static_cast<double>(below));
}

asha_rungs::asha_rungs(const asha_config& config, int64_t max_steps, judged_figure figure)
    : config_(config), figure_(figure) {
  for (int64_t m = config.min_steps; m > 0 && m < max_steps; m *= config.reduction) {
    milestones_.push_back(m);
    if (m > max_steps / config.reduction)
      break;  // the next would overflow past any run
  }
}

std::optional<std::string> asha_rungs::on_evaluation(std::size_t job, int64_t steps, double value) {
  for (auto m = milestones_.rbegin(); m != milestones_.rend(); ++m) {
    if (steps < *m)
      continue;
    auto& rung = recorded_[*m];
    if (rung.count(job) > 0)
      return std::nullopt;  // judged here already: nothing new until the next rung
    std::vector<double> before;
    for (const auto& [other, value] : rung)
      before.push_back(value);
    rung[job] = value;
    // The best 1/reduction: above this quantile of accuracies, below this one of losses.
    const double best_share = 1.0 / static_cast<double>(config_.reduction);
    const auto cutoff = quantile(before, figure_.by_loss ? best_share : 1.0 - best_share);
    if (!cutoff || !figure_.worse(value, *cutoff))
      return std::nullopt;
    return fmt::format(
        "stopped by asha at the rung of {} steps: {} {:.6g} {} {:.6g}, the top 1/{} of the {} "
        "job(s) there before it",
        *m, figure_.name(), value, figure_.worse_sign(), *cutoff, config_.reduction, before.size());
  }
  return std::nullopt;
}

}  // namespace troupe
