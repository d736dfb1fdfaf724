// Where a job's data comes from, and what the plan may know of it before it is loaded: the
// number of rows of each split and of classes. The plan is made from these facts (so that
// `troupe validate` states steps per epoch without reading the data); after loading, the data
// must match them.
#pragma once

#include "core/data/dataset.hpp"
#include "core/data/targets.hpp"
#include "core/job/job_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct data_facts {
  int64_t train_rows = 0;       ///< what the run trains on, the validation rows held out
  int64_t validation_rows = 0;  ///< held out of the training set (data.validation)
  int64_t test_rows = 0;
  int64_t classes = 0;  ///< the model's outputs: one per class, or per float target value
  /// The shape of one input row: [1, 28, 28] images, or whatever tensor files hold.
  std::vector<int64_t> row_shape{1, 28, 28};
  /// The targets: int64 class labels, or float targets of target_shape per row
  /// (core/data/targets.hpp).
  bool class_labels = true;
  std::vector<int64_t> target_shape;
  /// Inputs left out because they could not be read (data.bad_images "skip").
  int64_t skipped_rows = 0;
};

/// What `config` will load (its validation rows held out), known without loading it: the rows
/// Fashion-MNIST's image files declare in their headers (its published sizes when they cannot be
/// read; the load then fails naming the file), or the synthetic set's configured sizes. For a
/// coordinator whose nodes read their own copies of the files.
data_facts describe_data(const data_config& config);

/// As describe_data, but a data file whose header cannot be read is an error (data_error naming
/// the file) instead of a guess: `troupe validate` and a suite's checks must not pass a job whose
/// data is missing.
data_facts read_data_facts(const data_config& config);

/// The facts of a data set in memory.
data_facts facts_of(const dataset& data);

/// Throws data_error naming the data and both figures when `loaded` differs from `planned`.
void check_data_matches(const data_facts& planned, const dataset& loaded,
                        const data_config& config);

/// Throws data_error naming the file for a missing, truncated or malformed data file. The
/// validation set is held out of the training set with the job's `seed`.
dataset_ptr load_dataset(const data_config& config, uint64_t seed);

}  // namespace troupe
