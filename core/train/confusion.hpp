// The confusion matrix of a classification's evaluation: how many rows of each true class were
// predicted as each class. Workers count their shards (with the loss and metric sums), the run
// driver adds the shards up, and the run's final evaluation goes into the metrics as a
// `confusion` record that the run page draws with each class's accuracy.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace troupe {

/// Above this many classes no matrix is counted: 100 classes make 10,000 counts a message, more
/// would outweigh the evaluation they describe.
inline constexpr int64_t max_confusion_classes = 100;

/// Adds the rows of `logits` ([n, classes], any device), predicted by their largest score,
/// against `labels` ([n] int64) to `counts`: row-major, row the true class, column the
/// predicted one; an empty `counts` grows to classes x classes. Nothing for more than
/// max_confusion_classes classes.
void add_confusion(std::vector<int64_t>& counts, const at::Tensor& logits, const at::Tensor& labels,
                   int64_t classes);

/// `into` += `more` (shards of one evaluation); an empty side adds nothing. Throws
/// std::invalid_argument when both hold counts of different sizes.
void add_counts(std::vector<int64_t>& into, const std::vector<int64_t>& more);

/// The classes of a square matrix of `counts`; 0 for none; throws std::invalid_argument when
/// the size is not a square.
int64_t confusion_classes(const std::vector<int64_t>& counts);

}  // namespace troupe
