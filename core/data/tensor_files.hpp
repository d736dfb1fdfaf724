// Your own images as tensor files: `"data": {"type": "tensors", "train": "train.pt", "test":
// "test.pt"}`, each written by Python's torch.save({"x": X, "y": Y}, path) with
//   x: float32 or uint8, [N, 1, 28, 28], [N, 28, 28] or [N, 784] (uint8 is divided by 255,
//      float32 taken as it is: normalize it as you want it trained)
//   y: int64 [N], class indices from 0 (the classes are 1 + the largest training label), or
//      float32 [N, ...] targets for mse, l1 and bce_with_logits (core/data/targets.hpp).
// Every file is read through the checked unpickler (core/io/pickled_tensors): a truncated file,
// random bytes, or a tensor whose stored bytes are fewer than its shape declares is refused,
// never loaded. Each message names the file and, where it applies, the key.
//
// Rows of other shapes are kept for a TorchScript model: the built-in models take 28 x 28 images.
#pragma once

#include "core/data/dataset.hpp"
#include "core/data/targets.hpp"

#include <string>

namespace troupe {

/// One split's file, checked. `train`: undefined for the training split, else its targets, which
/// the test split's must match (core/data/targets.hpp). Throws data_error naming `path` and the
/// key.
labeled_images read_tensor_split(const std::string& path, const at::Tensor& train);

/// Both files, as a dataset (no validation rows held out yet).
dataset load_tensor_files(const std::string& train_path, const std::string& test_path);

}  // namespace troupe
