#include "core/train/stage_windows.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <string>

namespace troupe {

stage_windows::stage_windows(int64_t pipelines, int64_t stages)
    : pipelines_(pipelines), stages_(stages) {}

std::vector<stage_idle> stage_windows::add(const stage_timing& t) {
  if (t.worker < 0 || t.worker >= pipelines_ * stages_)
    throw std::invalid_argument("stage timing of worker " + std::to_string(t.worker) +
                                ", there are " + std::to_string(pipelines_ * stages_));
  auto& step = steps_[t.step];
  if (!step.emplace(t.worker, t).second)
    throw std::invalid_argument("a second stage timing of worker " + std::to_string(t.worker) +
                                " for step " + std::to_string(t.step));
  if (static_cast<int64_t>(step.size()) < pipelines_ * stages_)
    return {};
  std::vector<stage_idle> out;
  for (int64_t p = 0; p < pipelines_; ++p) {
    int64_t begin = std::numeric_limits<int64_t>::max();
    int64_t end = std::numeric_limits<int64_t>::min();
    for (int64_t s = 0; s < stages_; ++s) {
      const auto& x = step.at(p * stages_ + s);
      begin = std::min(begin, x.first_op_ns);
      end = std::max(end, x.last_op_ns);
    }
    const double window_s = static_cast<double>(end - begin) * 1e-9;
    for (int64_t s = 0; s < stages_; ++s) {
      const auto& x = step.at(p * stages_ + s);
      out.push_back({x, p, s, std::max(0.0, window_s - x.busy_s)});
    }
  }
  steps_.erase(t.step);
  return out;
}

}  // namespace troupe
