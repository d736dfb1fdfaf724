// What troupe does to every input before the model sees it, written out for people and programs
// that use the trained weights elsewhere: evaluated on raw x/255 images, weights trained on
// normalized ones lose 12 points of accuracy with no error to say why.
#pragma once

#include "core/job/job_config.hpp"

#include <nlohmann/json.hpp>

namespace troupe {

/// For Fashion-MNIST: {"input": ..., "scale": 1/255, "mean": 0.2860, "std": 0.3530,
/// "formula": "(x/255 - 0.2860)/0.3530"}; null for the synthetic set (used as generated).
nlohmann::ordered_json preprocessing_json(data_kind kind);

}  // namespace troupe
