// A deterministic, learnable data set for tests and demos: ten random class prototypes (28x28)
// and samples that are a prototype plus Gaussian noise. Same seed, same bytes, on any thread
// (it uses its own generator, never LibTorch's global one).
#pragma once

#include "core/data/dataset.hpp"

#include <cstdint>

namespace troupe {

/// Train and test share the prototypes but are different draws; labels are drawn uniformly
/// from 0..9. Requires sample counts >= 0 and a finite noise >= 0 (std::invalid_argument).
dataset make_synthetic(int64_t train_samples, int64_t test_samples, double noise, uint64_t seed);

}  // namespace troupe
