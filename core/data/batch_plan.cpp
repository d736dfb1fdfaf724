#include "core/data/batch_plan.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

#include <random>

namespace troupe {

row_range shard_of(int64_t batch, int64_t parts, int64_t rank) {
  TORCH_CHECK(parts > 0 && rank >= 0 && rank < parts, "shard_of: rank ", rank, " of ", parts);
  const int64_t base = batch / parts;
  const int64_t extra = batch % parts;
  const int64_t begin = rank * base + std::min(rank, extra);
  return {begin, begin + base + (rank < extra ? 1 : 0)};
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> order(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    order[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(seed);
  for (int64_t i = n - 1; i > 0; --i) {
    // Unbiased draw in [0, i] by rejection (std::uniform_int_distribution is not portable).
    const uint64_t bound = static_cast<uint64_t>(i) + 1;
    const uint64_t limit = std::mt19937_64::max() - std::mt19937_64::max() % bound;
    uint64_t r;
    do {
      r = rng();
    } while (r >= limit);
    std::swap(order[static_cast<size_t>(i)], order[static_cast<size_t>(r % bound)]);
  }
  return order;
}

batch_plan::batch_plan(int64_t samples, int64_t batch_size, uint64_t seed)
    : samples_(samples), batch_size_(batch_size), seed_(seed) {
  TORCH_CHECK(batch_size > 0 && samples >= batch_size, "batch_plan: the train set has ", samples,
              " samples, fewer than one global batch of ", batch_size);
}

at::Tensor batch_plan::indices(int64_t step, row_range rows) {
  const int64_t epoch = epoch_of(step);
  if (epoch != cached_epoch_) {
    // Mix the epoch into the seed so each epoch gets its own order.
    order_ = permutation(samples_, seed_ * 0x9E3779B97F4A7C15ULL + static_cast<uint64_t>(epoch));
    cached_epoch_ = epoch;
  }
  const int64_t first = (step % steps_per_epoch()) * batch_size_ + rows.begin;
  TORCH_CHECK(rows.begin >= 0 && rows.end <= batch_size_ && rows.begin <= rows.end,
              "batch_plan: rows out of range");
  return at::tensor(at::ArrayRef<int64_t>(order_.data() + first, static_cast<size_t>(rows.size())));
}

}  // namespace troupe
