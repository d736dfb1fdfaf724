// A deterministic, learnable data set for tests and demos: ten random class prototypes (28x28)
// and samples that are a prototype plus Gaussian noise. Same seed, same bytes, on any thread
// (it uses its own generator, never LibTorch's global one).
#pragma once

#include "core/data/dataset.hpp"
#include "core/data/fashion_mnist.hpp"

#include <cstdint>

namespace troupe {

/// As many classes as Fashion-MNIST, so every built-in model fits both data sets.
inline constexpr int64_t synthetic_classes = fashion_mnist_classes;

/// Train and test share the prototypes but are different draws; labels are drawn uniformly
/// from 0..9. Requires sample counts >= 0 and a finite noise >= 0 (std::invalid_argument).
dataset make_synthetic(int64_t train_samples, int64_t test_samples, double noise, uint64_t seed);

}  // namespace troupe
