// Your own images as tensor files: `"data": {"type": "tensors", "train": "train.pt", "test":
// "test.pt"}`, each written by Python's torch.save({"x": X, "y": Y}, path) with
//   x: float32 or uint8, [N, 1, 28, 28], [N, 28, 28] or [N, 784] (uint8 is divided by 255,
//      float32 taken as it is: normalize it as you want it trained)
//   y: int64 [N], class indices from 0; the classes are 1 + the largest training label.
// Every file is read through the checked unpickler (core/io/pickled_tensors): a truncated file,
// random bytes, or a tensor whose stored bytes are fewer than its shape declares is refused,
// never loaded. Each message names the file and, where it applies, the key.
//
// Other shapes and float targets (regression) are not supported yet: the built-in models take
// 28 x 28 images.
#pragma once

#include "core/data/dataset.hpp"

#include <string>

namespace troupe {

/// The largest class count accepted: a label of 10^9 would otherwise size the model's output.
inline constexpr int64_t max_tensor_classes = 100000;

/// One split's file, checked. `classes` 0: the labels set it (training); else every label must
/// be below it (test). Throws data_error naming `path` and the key.
labeled_images read_tensor_split(const std::string& path, int64_t classes);

/// Both files, as a dataset (no validation rows held out yet).
dataset load_tensor_files(const std::string& train_path, const std::string& test_path);

}  // namespace troupe
