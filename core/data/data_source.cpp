#include "core/data/data_source.hpp"

#include "core/data/fashion_mnist.hpp"
#include "core/data/synthetic.hpp"
#include "core/errors.hpp"

#include <stdexcept>

namespace troupe {

namespace {

// The rows the files' headers declare. Files that cannot be read are planned with the published
// sizes: loading them fails the run, naming the file, as with any bad data file.
data_facts fashion_facts(const std::string& folder) {
  data_facts facts{fashion_mnist_train_rows, fashion_mnist_test_rows, fashion_mnist_classes};
  try {
    const auto rows = count_fashion_mnist(folder);
    facts.train_rows = rows.train;
    facts.test_rows = rows.test;
  } catch (const data_error&) {
  }
  return facts;
}

}  // namespace

data_facts describe_data(const data_config& config) {
  switch (config.kind) {
    case data_kind::fashion_mnist:
      return fashion_facts(config.path);
    case data_kind::synthetic:
      return {config.train_samples, config.test_samples, synthetic_classes};
  }
  throw std::logic_error("unknown data kind");
}

data_facts facts_of(const dataset& data) {
  return {data.train.size(), data.test.size(), data.classes};
}

void check_data_matches(const data_facts& planned, const dataset& loaded,
                        const data_config& config) {
  const auto got = facts_of(loaded);
  const auto where = config.kind == data_kind::fashion_mnist ? config.path : "the synthetic set";
  const auto differ = [&](const char* what, int64_t want, int64_t have) {
    throw data_error(where + ": holds " + std::to_string(have) + " " + what + ", the plan (" +
                     to_string(config.kind) + ") expects " + std::to_string(want));
  };
  if (got.train_rows != planned.train_rows)
    differ("training rows", planned.train_rows, got.train_rows);
  if (got.test_rows != planned.test_rows)
    differ("test rows", planned.test_rows, got.test_rows);
  if (got.classes != planned.classes)
    differ("classes", planned.classes, got.classes);
}

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

}  // namespace troupe
