// Loads Fashion-MNIST from the four gzipped IDX files of Debian's dataset-fashion-mnist.
#pragma once

#include "core/data/dataset.hpp"

#include <string>
#include <vector>

namespace troupe {

/// Fashion-MNIST's published splits and its ten classes (t-shirt ... ankle boot).
inline constexpr int64_t fashion_mnist_train_rows = 60000;
inline constexpr int64_t fashion_mnist_test_rows = 10000;
inline constexpr int64_t fashion_mnist_classes = 10;

/// Fashion-MNIST train-set statistics, used to normalize every image (train and test).
inline constexpr double fashion_mnist_mean = 0.2860;
inline constexpr double fashion_mnist_std = 0.3530;

struct fashion_mnist_rows {
  int64_t train = 0;
  int64_t test = 0;
};

/// The four files load_fashion_mnist reads from `folder`.
std::vector<std::string> fashion_mnist_files(const std::string& folder);

/// The rows the train and test image files' headers declare, without reading their data.
/// Throws data_error as load_fashion_mnist does for a missing or malformed header.
fashion_mnist_rows count_fashion_mnist(const std::string& folder);

/// Reads <folder>/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz into images float32
/// [N,1,28,28], (pixel/255 - mean)/std, and labels int64 [N]. Throws data_error whose message
/// starts with the offending file: any read_idx_file error, images that are not N x 28 x 28,
/// labels that are not 1-D, a label count that differs from the image count (both files named),
/// a label outside 0..9 (its index and value named).
dataset load_fashion_mnist(const std::string& folder);

}  // namespace troupe
