#include "core/train/load_dataset.hpp"

#include "core/data/fashion_mnist.hpp"
#include "core/data/synthetic.hpp"

#include <stdexcept>

namespace troupe {

// Fashion-MNIST's fixed train split size.
constexpr int64_t fashion_mnist_train_samples = 60000;

dataset_ptr load_dataset(const data_config& config, uint64_t seed) {
  switch (config.kind) {
    case data_kind::fashion_mnist:
      return std::make_shared<const dataset>(load_fashion_mnist(config.path));
    case data_kind::synthetic:
      return std::make_shared<const dataset>(
          make_synthetic(config.train_samples, config.test_samples, config.noise, seed));
  }
  throw std::logic_error("unknown data kind");
}

int64_t expected_train_samples(const data_config& config) {
  return config.kind == data_kind::synthetic ? config.train_samples : fashion_mnist_train_samples;
}

}  // namespace troupe
