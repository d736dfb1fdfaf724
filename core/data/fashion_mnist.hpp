// Loads Fashion-MNIST from the four gzipped IDX files of Debian's dataset-fashion-mnist.
#pragma once

#include "core/data/dataset.hpp"

#include <string>

namespace troupe {

/// Fashion-MNIST train-set statistics, used to normalize every image (train and test).
inline constexpr double fashion_mnist_mean = 0.2860;
inline constexpr double fashion_mnist_std = 0.3530;

/// Throws data_error naming the offending file: missing or malformed files, images that are not
/// 28x28, label files whose count differs from their image file's, labels outside 0..9.
dataset load_fashion_mnist(const std::string& folder);

}  // namespace troupe
