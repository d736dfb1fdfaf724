// Loads the data set a job names (Fashion-MNIST from disk, or the synthetic set for tests).
#pragma once

#include "core/config/job_config.hpp"
#include "core/data/dataset.hpp"

namespace troupe {

/// Throws data_error naming the file for a missing, truncated or malformed data file.
dataset_ptr load_dataset(const data_config& config, uint64_t seed);

/// The number of training samples the data set will have, known without loading it (used by
/// `troupe validate` to state steps per epoch).
int64_t expected_train_samples(const data_config& config);

}  // namespace troupe
