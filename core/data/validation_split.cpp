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

}  // namespace

int64_t validation_rows(double validation, int64_t rows) {
  if (validation <= 0)
    return 0;
  if (validation >= 1)
    return static_cast<int64_t>(validation);
  return std::clamp<int64_t>(std::llround(validation * static_cast<double>(rows)), 1, rows);
}

std::vector<int64_t> validation_indices(int64_t rows, double validation, uint64_t seed) {
  const auto held = std::min(validation_rows(validation, rows), rows);
  if (held == 0)
    return {};
  auto order = permutation(rows, seed ^ split_salt);
  order.resize(static_cast<std::size_t>(held));
  std::sort(order.begin(), order.end());
  return order;
}

void hold_out_validation(dataset& data, double validation, uint64_t seed) {
  const auto rows = data.train.size();
  const auto held = validation_indices(rows, validation, seed);
  if (held.empty())
    return;
  std::vector<int64_t> kept;
  kept.reserve(static_cast<std::size_t>(rows) - held.size());
  for (int64_t r = 0, h = 0; r < rows; ++r) {
    if (h < static_cast<int64_t>(held.size()) && held[static_cast<std::size_t>(h)] == r)
      ++h;
    else
      kept.push_back(r);
  }
  const auto validation_index = at::tensor(held, at::kLong);
  const auto train_index = at::tensor(kept, at::kLong);
  data.validation = {data.train.images.subset(held),
                     data.train.labels.index_select(0, validation_index)};
  data.train = {data.train.images.subset(kept), data.train.labels.index_select(0, train_index)};
}

}  // namespace troupe
