// Cuts a model's ordered layer list into consecutive stages. A stage boundary always falls
// before a layer with parameters: layers without any (flatten, activations, pooling) stay with
// the parameterized layer before them (a leading flatten joins the first one), so no stage is
// left without weights to train.
//
// "balanced" minimizes the largest stage's parameter count (ties: the earliest boundaries);
// an explicit split names the first layer of every stage after the first.
#pragma once

#include "core/model/model_builder.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct stage_slice {
  int64_t begin = 0;  ///< index of the stage's first layer
  int64_t end = 0;    ///< one past its last layer
  int64_t parameters = 0;
  int64_t buffer_values = 0;  ///< its layers' buffers (BatchNorm statistics), behind the parameters
  /// What the stage's flat weights hold (core/model/flat_parameters).
  int64_t flat_size() const { return parameters + buffer_values; }
};

/// `boundaries` empty means balanced; otherwise it holds stages-1 layer names. Throws job_error
/// (at /parallelism/stages or /parallelism/split/i) for a split that cannot work.
std::vector<stage_slice> split_stages(const std::vector<layer_summary>& layers, int64_t stages,
                                      const std::vector<std::string>& boundaries);

}  // namespace troupe
