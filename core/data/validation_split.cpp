#include "core/data/validation_split.hpp"

#include "core/data/batch_plan.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <cmath>

namespace troupe {
namespace {

// The split's own stream of the job's seed ("validat"): the batch order draws from the seed
// itself, and neither should move when the other changes.
constexpr uint64_t split_salt = 0x76616c69646174ULL;

at::Tensor as_index(std::vector<int64_t> rows) {
  std::sort(rows.begin(), rows.end());
  return at::tensor(rows, at::kLong);
}

}  // namespace

int64_t validation_rows(double validation, int64_t rows) {
  if (validation <= 0)
    return 0;
  if (validation >= 1)
    return static_cast<int64_t>(validation);
  return std::clamp<int64_t>(std::llround(validation * static_cast<double>(rows)), 1, rows);
}

void hold_out_validation(dataset& data, double validation, uint64_t seed) {
  const auto rows = data.train.size();
  const auto held = std::min(validation_rows(validation, rows), rows);
  if (held == 0)
    return;
  const auto order = permutation(rows, seed ^ split_salt);
  const auto cut = order.begin() + held;
  const auto validation_index = as_index({order.begin(), cut});
  const auto train_index = as_index({cut, order.end()});
  data.validation = {data.train.images.index_select(0, validation_index),
                     data.train.labels.index_select(0, validation_index)};
  data.train = {data.train.images.index_select(0, train_index),
                data.train.labels.index_select(0, train_index)};
}

}  // namespace troupe
