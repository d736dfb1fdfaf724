// Synthetic data from a generator local to the call, so other threads drawing from LibTorch's
// global generator can neither change these tensors nor be changed by them.
#include "core/data/synthetic.hpp"

#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace troupe {
namespace {

labeled_images draw(const at::Tensor& prototypes, int64_t n, double noise, at::Generator& gen) {
  labeled_images out;
  out.labels = at::randint(synthetic_classes, {n}, gen, at::kLong);
  out.images =
      prototypes.index_select(0, out.labels) + noise * at::randn({n, 1, 28, 28}, gen, at::kFloat);
  return out;
}

}  // namespace

dataset make_synthetic(int64_t train_samples, int64_t test_samples, double noise, uint64_t seed) {
  if (train_samples < 0 || test_samples < 0 || !std::isfinite(noise) || noise < 0)
    throw std::invalid_argument(
        "make_synthetic: sample counts must be >= 0 and noise finite "
        "and >= 0");
  auto gen = at::detail::createCPUGenerator(seed);
  const auto prototypes = at::randn({synthetic_classes, 1, 28, 28}, gen, at::kFloat);
  dataset d;
  d.classes = synthetic_classes;
  // One generator in a fixed order: the test draws continue where the train draws stopped.
  d.train = draw(prototypes, train_samples, noise, gen);
  d.test = draw(prototypes, test_samples, noise, gen);
  std::ostringstream desc;
  desc << "synthetic (" << train_samples << " train, " << test_samples << " test, noise " << noise
       << ")";
  d.description = desc.str();
  return d;
}

}  // namespace troupe
