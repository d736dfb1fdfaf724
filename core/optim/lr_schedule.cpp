#include "core/optim/lr_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

namespace troupe {
namespace {

constexpr double pi = 3.14159265358979323846;

// OneCycleLR's cosine annealing from `start` to `end` over pct in [0, 1].
double annealed(double start, double end, double pct) {
  return end + (start - end) / 2.0 * (std::cos(pi * pct) + 1);
}

// OneCycleLR(max_lr, total_steps, pct_start, 'cos', div_factor, final_div_factor): up from
// max / div to max, then down to that / final_div.
double one_cycle(const lr_schedule_config& s, double max_lr, int64_t step, int64_t total) {
  const double initial = max_lr / s.div_factor;
  const double lowest = initial / s.final_div_factor;
  const double peak_step = s.pct_start * static_cast<double>(total) - 1;
  const double last_step = static_cast<double>(total) - 1;
  const auto t = static_cast<double>(step);
  // A peak at step 0 (pct_start x T = 1, where PyTorch's OneCycleLR divides by zero) starts at
  // max_lr and comes down; before step 0 (pct_start x T < 1) it starts below it, as PyTorch does.
  if (peak_step > 0 && t <= peak_step)
    return annealed(initial, max_lr, t / peak_step);
  if (last_step <= peak_step)
    return max_lr;  // one step with pct_start 1: its peak
  return annealed(max_lr, lowest, (t - peak_step) / (last_step - peak_step));
}

// The schedule after the warm-up: `t` counts from its first step, over `span` steps.
double main_phase(const lr_schedule_config& s, double base, int64_t t, int64_t span) {
  switch (s.kind) {
    case lr_schedule_kind::constant:
      return base;
    case lr_schedule_kind::step:
      return base * std::pow(s.gamma, static_cast<double>(t / s.every));
    case lr_schedule_kind::cosine:
      return s.min_lr +
             (base - s.min_lr) *
                 (1 + std::cos(pi * static_cast<double>(t) / static_cast<double>(span))) / 2;
    case lr_schedule_kind::one_cycle:
      return one_cycle(s, base, t, span);
  }
  return base;
}

}  // namespace

double learning_rate(const optimizer_config& o, int64_t step, int64_t total_steps) {
  const auto& s = o.schedule;
  const int64_t warmup = s.kind == lr_schedule_kind::one_cycle ? 0 : s.warmup_steps;
  if (step < warmup) {  // LinearLR from start_factor to 1 over the warm-up
    const double f = s.warmup_start_factor;
    return o.lr * (f + (1 - f) * static_cast<double>(step) / static_cast<double>(warmup));
  }
  return main_phase(s, o.lr, step - warmup, std::max<int64_t>(1, total_steps - warmup));
}

double learning_rate_factor(const optimizer_config& o, int64_t step, int64_t total_steps) {
  return learning_rate(o, step, total_steps) / o.lr;
}

std::string describe_schedule(const optimizer_config& o, int64_t total_steps) {
  const auto& s = o.schedule;
  std::ostringstream out;
  switch (s.kind) {
    case lr_schedule_kind::constant:
      out << "constant";
      break;
    case lr_schedule_kind::step:
      out << "x" << s.gamma << " every " << s.every << " steps";
      break;
    case lr_schedule_kind::cosine:
      out << "cosine to " << s.min_lr;
      break;
    case lr_schedule_kind::one_cycle:
      // The rise ends at step pct_start x T - 1: at step 0 or before, there is none.
      if (s.pct_start * static_cast<double>(total_steps) > 1)
        out << "one cycle: " << o.lr / s.div_factor << " up to " << o.lr << " over "
            << static_cast<int64_t>(s.pct_start * static_cast<double>(total_steps)) << " steps";
      else
        out << "one cycle: no rise (pct_start x steps <= 1), from "
            << learning_rate(o, 0, total_steps);
      out << ", down to " << o.lr / s.div_factor / s.final_div_factor;
      break;
  }
  if (s.kind != lr_schedule_kind::one_cycle && s.warmup_steps > 0)
    out << ", after " << s.warmup_steps << " warm-up steps from " << o.lr * s.warmup_start_factor;
  out << " (last step " << learning_rate(o, total_steps - 1, total_steps) << ")";
  return out.str();
}

}  // namespace troupe
