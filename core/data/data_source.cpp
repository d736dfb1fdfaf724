#include "core/data/data_source.hpp"

#include "core/data/csv_table.hpp"
#include "core/data/fashion_mnist.hpp"
#include "core/data/image_folder.hpp"
#include "core/data/npy_arrays.hpp"
#include "core/data/synthetic.hpp"
#include "core/data/tensor_files.hpp"
#include "core/data/validation_split.hpp"
#include "core/errors.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

namespace troupe {

namespace {

// The rows the files' headers declare. Files that cannot be read are planned with the published
// sizes: loading them fails the run, naming the file, as with any bad data file.
// Rows and classes of an image set of 28 x 28 images with class labels.
data_facts image_facts(int64_t train_rows, int64_t test_rows, int64_t classes) {
  data_facts facts;
  facts.train_rows = train_rows;
  facts.test_rows = test_rows;
  facts.classes = classes;
  return facts;
}

data_facts fashion_facts(const std::string& folder) {
  auto facts =
      image_facts(fashion_mnist_train_rows, fashion_mnist_test_rows, fashion_mnist_classes);
  try {
    const auto rows = count_fashion_mnist(folder);
    facts.train_rows = rows.train;
    facts.test_rows = rows.test;
  } catch (const data_error&) {
  }
  return facts;
}

// The user's files: read whole (tensor files and tables have no header to plan from), memory-
// mapped (arrays), or decoded (images: which of them decode is known only then).
dataset load_files(const data_config& config, uint64_t seed) {
  if (config.kind == data_kind::image_folder)
    return load_image_folders(config, seed);
  if (config.kind == data_kind::npy)
    return load_npy_arrays(config.train_arrays, config.test_arrays);
  if (config.kind == data_kind::csv)
    return load_csv_files(config.train_file, config.test_file, config.label, config.class_labels);
  return load_tensor_files(config.train_file, config.test_file);
}

data_facts raw_facts(const data_config& config, bool strict) {
  switch (config.kind) {
    case data_kind::fashion_mnist:
      if (strict) {
        const auto rows = count_fashion_mnist(config.path);
        return image_facts(rows.train, rows.test, fashion_mnist_classes);
      }
      return fashion_facts(config.path);
    case data_kind::synthetic:
      return image_facts(config.train_samples, config.test_samples, synthetic_classes);
    case data_kind::tensors:
    case data_kind::csv:
    case data_kind::npy:
    case data_kind::image_folder:
      // No header to read without unpickling (or parsing): the files are read (and checked)
      // whole, strict or not, since there are no published sizes to plan with. Arrays are
      // mapped, their targets read.
      return facts_of(load_files(config, 0));
  }
  throw std::logic_error("unknown data kind");
}

data_facts hold_out(data_facts facts, const data_config& config) {
  facts.validation_rows = validation_rows(config.validation, facts.train_rows);
  facts.train_rows -= facts.validation_rows;
  return facts;
}

}  // namespace

data_facts describe_data(const data_config& config) {
  return hold_out(raw_facts(config, false), config);
}

data_facts read_data_facts(const data_config& config) {
  return hold_out(raw_facts(config, true), config);
}

namespace {

// A dataset a library user built: its rows and labels must pair up. 200 images with 100 labels
// trained on half of them without a word; 100 with 200 failed in a worker with "index out of
// range"; int64 labels of shape [N, 2] failed there with "multi-target not supported".
void check_split(const labeled_images& split, const char* name) {
  if (!split.images.defined() && !split.labels.defined())
    return;
  const auto rows = split.images.defined() ? split.images.size() : 0;
  const auto labels = split.labels.defined() ? split.labels.size(0) : 0;
  if (rows != labels)
    throw data_error(std::string("the ") + name + " set holds " + std::to_string(rows) +
                     " rows of inputs and " + std::to_string(labels) +
                     " labels; every row needs its label");
  if (split.labels.defined() && split.labels.scalar_type() == at::kLong && split.labels.dim() != 1)
    throw data_error(
        fmt::format("the {} set's class labels (int64) have shape [{}]; class "
                    "labels are one per row, [N] (float32 targets may have more)",
                    name, fmt::join(split.labels.sizes(), ", ")));
}

}  // namespace

data_facts facts_of(const dataset& data) {
  check_split(data.train, "training");
  check_split(data.validation, "validation");
  check_split(data.test, "test");
  return {data.train.size(),     data.validation.size(),
          data.test.size(),      data.classes,
          row_shape_of(data),    class_labels(data.train.labels),
          target_shape_of(data), static_cast<int64_t>(data.skipped.size())};
}

void check_data_matches(const data_facts& planned, const dataset& loaded,
                        const data_config& config) {
  const auto got = facts_of(loaded);
  const auto where = config.kind == data_kind::fashion_mnist ? config.path
                     : config.kind == data_kind::synthetic   ? std::string("the synthetic set")
                     : config.kind == data_kind::npy         ? config.train_arrays.x.front()
                                                             : config.train_file;
  const auto differ = [&](const char* what, int64_t want, int64_t have) {
    throw data_error(where + ": holds " + std::to_string(have) + " " + what + ", the plan (" +
                     to_string(config.kind) + ") expects " + std::to_string(want));
  };
  if (got.train_rows != planned.train_rows)
    differ("training rows", planned.train_rows, got.train_rows);
  if (got.validation_rows != planned.validation_rows)
    differ("validation rows", planned.validation_rows, got.validation_rows);
  if (got.test_rows != planned.test_rows)
    differ("test rows", planned.test_rows, got.test_rows);
  if (got.classes != planned.classes)
    differ("classes", planned.classes, got.classes);
  if (got.row_shape != planned.row_shape)
    throw data_error(where + ": its input rows changed shape since the plan was made");
  if (got.class_labels != planned.class_labels || got.target_shape != planned.target_shape)
    throw data_error(where + ": its targets changed since the plan was made");
}

dataset_ptr load_dataset(const data_config& config, uint64_t seed) {
  auto data = config.kind == data_kind::fashion_mnist ? load_fashion_mnist(config.path)
              : config.kind == data_kind::synthetic
                  ? make_synthetic(config.train_samples, config.test_samples, config.noise, seed)
                  : load_files(config, seed);
  hold_out_validation(data, config.validation, seed);
  return std::make_shared<const dataset>(std::move(data));
}

}  // namespace troupe
