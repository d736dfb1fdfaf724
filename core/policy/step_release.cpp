#include "core/policy/step_release.hpp"

namespace troupe {

step_release::step_release(int64_t total_steps, int64_t window)
    : total_steps_(total_steps), window_(window) {}

std::optional<int64_t> step_release::take() {
  if (stopped_ || held_ || next_ >= total_steps_)
    return std::nullopt;
  return next_++;
}

std::vector<int64_t> step_release::start(int64_t first) {
  next_ = first;
  held_ = false;
  std::vector<int64_t> steps;
  for (int64_t i = 0; i < window_; ++i)
    if (auto s = take())
      steps.push_back(*s);
  return steps;
}

std::optional<int64_t> step_release::on_complete(int64_t step) {
  // Completions come in order; the window slides by one each time.
  if (next_ > step + window_)
    return std::nullopt;
  return take();
}

std::optional<int64_t> step_release::release_last() {
  auto s = take();
  stopped_ = true;
  return s;
}

}  // namespace troupe
