// A validation set held out of the training set (data.validation): a fraction or a number of
// rows, chosen by a permutation of the job's seed (its own stream, so the split does not move
// when the batch order's does). The remaining training rows keep their order.
#pragma once

#include "core/data/dataset.hpp"

#include <cstdint>
#include <vector>

namespace troupe {

/// How many of `rows` training rows `validation` holds out: a fraction in (0, 1) of them
/// (rounded, at least 1), a whole number of rows, or 0.
int64_t validation_rows(double validation, int64_t rows);

/// Which of `rows` training rows are held out, ascending (what a run records in
/// validation_rows.json, so the split can be reproduced elsewhere).
std::vector<int64_t> validation_indices(int64_t rows, double validation, uint64_t seed);

/// Moves the validation_indices rows from `data.train` to `data.validation`; the rest keep
/// their order. Nothing when `validation` is 0.
void hold_out_validation(dataset& data, double validation, uint64_t seed);

}  // namespace troupe
