// An image classification data set held in memory as two tensors. Read-only after loading, so
// one instance is shared by every replica of a process (by shared_ptr) without locking.
#pragma once

#include "core/data/row_column.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace troupe {

struct labeled_images {
  /// float32 [N, 1, 28, 28], normalized (mean 0, std 1 over the train set); tensor files may
  /// hold rows of any other shape, for a TorchScript model, and .npy arrays stay in their files
  /// until a step gathers its rows
  row_column images;
  /// int64 [N], values in [0, classes); or float32 [N, ...] targets (core/data/targets.hpp)
  at::Tensor labels;
  int64_t size() const { return labels.defined() ? labels.size(0) : 0; }
};

struct dataset {
  std::string description;  ///< for the plan, e.g. "fashion_mnist (60000 train, 10000 test)"
  int64_t classes = 0;      ///< the model's outputs: classes, or float target values per row
  labeled_images train;
  labeled_images validation;  ///< held out of the training set (data.validation); may be empty
  labeled_images test;
  /// "file: why" of each input left out of the set it was in (data.bad_images "skip").
  std::vector<std::string> skipped;
};

using dataset_ptr = std::shared_ptr<const dataset>;

/// The shape of one input row of the training set (e.g. [1, 28, 28]).
inline std::vector<int64_t> row_shape_of(const dataset& data) {
  return data.train.images.row_shape();
}

/// The shape of one target row: [] for class labels and single float targets.
inline std::vector<int64_t> target_shape_of(const dataset& data) {
  const auto sizes = data.train.labels.sizes();
  return std::vector<int64_t>(sizes.begin() + 1, sizes.end());
}

/// What a run evaluates while it trains: the validation set when the data has one, else the
/// test set (which a run with a validation set evaluates once, at the end).
inline const labeled_images& evaluation_set(const dataset& data) {
  return data.validation.size() > 0 ? data.validation : data.test;
}

}  // namespace troupe
