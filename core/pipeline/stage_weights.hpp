// A pipeline's stages each hold a slice of the model as flat weights: the slice's parameters,
// then its buffers (core/model/flat_parameters). The whole model's flat weights are every
// parameter, then every buffer, in module order: what a whole network loads (the test set's
// evaluation, final_model.pt) and what the saved files are named by. This puts the stages'
// parts in that order.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <vector>

namespace troupe {

/// `stages[s]` is stage s's flat weights, `stage_parameters[s]` its parameter count. Empty
/// `stage_parameters`: parts without buffers, concatenated as they are.
at::Tensor model_weights_of_stages(const std::vector<at::Tensor>& stages,
                                   const std::vector<int64_t>& stage_parameters);

}  // namespace troupe
