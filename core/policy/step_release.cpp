#include "core/policy/step_release.hpp"

#include "core/policy/step_pace.hpp"

#include <stdexcept>
#include <string>

namespace troupe {

step_release::step_release(int64_t total_steps, int64_t window, int64_t block)
    : total_steps_(total_steps), window_(window), block_(block) {
  check_pace(window, block);
}

void step_release::check_pace(int64_t window, int64_t block) {
  if (window < 1 || block < 1 || block > window)
    throw std::invalid_argument("step_release: needs 1 <= block <= window, got block " +
                                std::to_string(block) + " and window " + std::to_string(window));
}

void step_release::set_pace(int64_t window, int64_t block) {
  check_pace(window, block);
  window_ = window;
  block_ = block;
}

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

std::vector<int64_t> step_release::on_complete(int64_t step) {
  // Completions come in order; steps through step + window may be out, and they go once a
  // block of them may.
  const auto limit = step + window_;
  std::vector<int64_t> steps;
  if (limit - next_ + 1 < block_)
    return steps;
  while (next_ <= limit) {
    const auto s = take();
    if (!s)
      break;
    steps.push_back(*s);
  }
  return steps;
}

std::vector<int64_t> step_release::release_last(
    const std::function<bool(int64_t)>& may_stop_after) {
  std::vector<int64_t> steps;
  while (auto s = take()) {
    steps.push_back(*s);
    if (may_stop_after(*s))
      break;
  }
  stopped_ = true;
  return steps;
}

release_pace release_pace_for(double step_s) {
  if (step_s > 0 && step_s < short_step_s)
    return {block_release_window, release_block_steps};
  return {release_window, 1};
}

}  // namespace troupe
