#include "core/metrics/metrics_budget.hpp"

#include <algorithm>

namespace troupe {

metrics_budget::metrics_budget(double fixed_bytes, double bytes_per_s, double settle_s)
    : fixed_bytes_(fixed_bytes), bytes_per_s_(bytes_per_s), settle_s_(settle_s) {}

int64_t metrics_budget::stride_after(std::size_t bytes, double elapsed_s) {
  const double written = static_cast<double>(bytes);
  const double period = elapsed_s - changed_at_s_;
  // Over the allowance only because of an earlier, faster stride is no reason to thin more: the
  // allowance catches up at the rate the current stride keeps under.
  const bool too_fast = period >= settle_s_ && written - bytes_at_change_ > bytes_per_s_ * period;
  if (written > allowance(elapsed_s) && too_fast && stride_ < max_stride) {
    stride_ *= 2;
    changed_at_s_ = elapsed_s;
    bytes_at_change_ = written;
  }
  return stride_;
}

void metrics_budget::restore_stride(int64_t stride) {
  stride_ = std::clamp<int64_t>(stride, 1, max_stride);
}

}  // namespace troupe
