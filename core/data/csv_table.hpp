// Tables as data: `"data": {"type": "csv", "train": "train.csv", "test": "test.csv", "label":
// "price"}`. Each file has a header row naming its columns; the `label` column is the target
// and every other column, in file order, is an input feature (x: float32 [N, features]). The
// target is an int64 class label under cross_entropy (a whole number from 0) and a float target
// ([N]) under the other losses. Parsed by libcsv (RFC 4180 quoting, strict mode); every number is
// read whole, and a cell that is empty, not a number or not finite is refused naming the file,
// the line and the column. The test file must have the training file's header.
#pragma once

#include "core/data/dataset.hpp"

#include <string>
#include <vector>

namespace troupe {

struct csv_split {
  std::vector<std::string> header;
  labeled_images rows;
};

/// One file, checked. `train`: the training file's split when this is the test file, else null.
/// Throws data_error naming `path` and, where it applies, the line and column.
csv_split read_csv_split(const std::string& path, const std::string& label, bool class_labels,
                         const csv_split* train);

/// Both files, as a dataset (no validation rows held out yet).
dataset load_csv_files(const std::string& train_path, const std::string& test_path,
                       const std::string& label, bool class_labels);

}  // namespace troupe
