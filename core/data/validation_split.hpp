// A validation set held out of the training set (data.validation): a fraction or a number of
// rows, chosen by a permutation of the job's seed (its own stream, so the split does not move
// when the batch order's does). The remaining training rows keep their order.
#pragma once

#include "core/data/dataset.hpp"

#include <cstdint>

namespace troupe {

/// How many of `rows` training rows `validation` holds out: a fraction in (0, 1) of them
/// (rounded, at least 1), a whole number of rows, or 0.
int64_t validation_rows(double validation, int64_t rows);

/// Moves validation_rows(validation, train rows) seeded rows from `data.train` to
/// `data.validation`. Nothing when `validation` is 0.
void hold_out_validation(dataset& data, double validation, uint64_t seed);

}  // namespace troupe
