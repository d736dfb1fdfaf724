#include "core/train/divergence_watch.hpp"

#include <fmt/format.h>

#include <cmath>

namespace troupe {

divergence_watch::divergence_watch(double factor, int64_t window)
    : factor_(factor), window_(window) {}

std::optional<std::string> divergence_watch::on_step(int64_t step, double loss) {
  // A NaN's sign bit means nothing: fmt printed "-nan" for some.
  if (!std::isfinite(loss))
    return fmt::format("loss is {} at step {}", std::isnan(loss) ? "nan" : fmt::format("{}", loss),
                       step);
  if (!first_) {
    first_ = loss;
    return std::nullopt;
  }
  // A first loss of 0 (or below) leaves nothing to be a multiple of: only non-finite counts.
  if (*first_ <= 0 || loss <= factor_ * *first_) {
    above_ = 0;
    return std::nullopt;
  }
  if (++above_ < window_)
    return std::nullopt;
  return fmt::format("loss {:.4g} at step {}, above {:g} x the first step's {:.4g} for {} steps",
                     loss, step, factor_, *first_, window_);
}

}  // namespace troupe
