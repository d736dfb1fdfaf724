// The median the benchmarks report: of an even count, the mean of the two middle values (the
// upper one alone, which they took, made "the median of 10" the 6th fastest).
#pragma once

#include <algorithm>
#include <stdexcept>
#include <vector>

namespace troupe::bench {

/// Throws std::invalid_argument for no values: a benchmark that timed nothing has no figure.
inline double median(std::vector<double> values) {
  if (values.empty())
    throw std::invalid_argument("the median of no values");
  std::sort(values.begin(), values.end());
  const auto middle = values.size() / 2;
  return values.size() % 2 == 1 ? values[middle] : (values[middle - 1] + values[middle]) / 2;
}

}  // namespace troupe::bench
