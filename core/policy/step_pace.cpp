#include "core/policy/step_pace.hpp"

#include <algorithm>

namespace troupe {

void step_pace::release(int64_t step) {
  released_ = std::max(released_, step + 1);
}

bool step_pace::announce_checkpoint(int64_t step) {
  if (step < next_)
    return false;
  checkpoints_.insert(step);
  return true;
}

int64_t step_pace::begin() {
  busy_ = true;
  return next_;
}

bool step_pace::finish(int64_t step) {
  busy_ = false;
  next_ = step + 1;
  return checkpoints_.erase(step) > 0;
}

}  // namespace troupe
