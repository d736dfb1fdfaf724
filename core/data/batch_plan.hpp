// Which training samples each step uses. Every epoch is a fresh permutation of the train set
// drawn from the job's seed; step s takes the s-th full global batch of its epoch (an incomplete
// last batch is dropped), and replica r takes its contiguous share of that batch in rank order.
// Any replica, in any process, computes the same indices from the same (seed, samples, batch).
//
// Thread safety: none; each replica owns its own plan (it caches the current epoch).
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace troupe {

/// Rows [begin, end) of a global batch.
struct row_range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

/// Splits a batch of `batch` rows over `parts` ranks as evenly as possible: the first
/// batch % parts ranks get one row more. Ranks are contiguous and in order.
row_range shard_of(int64_t batch, int64_t parts, int64_t rank);

/// Fisher-Yates over [0, n) driven by std::mt19937_64 (whose output the standard fixes), so the
/// permutation is the same on every platform and library version.
std::vector<int64_t> permutation(int64_t n, uint64_t seed);

class batch_plan {
 public:
  batch_plan(int64_t samples, int64_t batch_size, uint64_t seed);

  /// Full global batches in one pass over `samples` (an incomplete last batch is dropped).
  static int64_t steps_in_epoch(int64_t samples, int64_t batch_size) {
    return batch_size > 0 ? samples / batch_size : 0;
  }
  int64_t steps_per_epoch() const { return steps_in_epoch(samples_, batch_size_); }
  int64_t epoch_of(int64_t step) const { return step / steps_per_epoch(); }

  /// int64 indices into the train set of rows [rows.begin, rows.end) of step's global batch.
  at::Tensor indices(int64_t step, row_range rows);

 private:
  int64_t samples_;
  int64_t batch_size_;
  uint64_t seed_;
  int64_t cached_epoch_ = -1;
  std::vector<int64_t> order_;
};

}  // namespace troupe
