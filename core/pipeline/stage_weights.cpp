#include "core/pipeline/stage_weights.hpp"

#include <ATen/ATen.h>

namespace troupe {

at::Tensor model_weights_of_stages(const std::vector<at::Tensor>& stages,
                                   const std::vector<int64_t>& stage_parameters) {
  TORCH_CHECK(!stages.empty(), "model_weights_of_stages: no stage");
  if (stage_parameters.empty())
    return stages.size() == 1 ? stages.front() : at::cat(stages);
  TORCH_CHECK(stage_parameters.size() == stages.size(), "model_weights_of_stages: ", stages.size(),
              " stages, ", stage_parameters.size(), " parameter counts");
  std::vector<at::Tensor> parameters;
  std::vector<at::Tensor> buffers;
  for (std::size_t s = 0; s < stages.size(); ++s) {
    const auto n = stage_parameters[s];
    TORCH_CHECK(n >= 0 && n <= stages[s].numel(), "model_weights_of_stages: stage ", s, " has ",
                stages[s].numel(), " values, fewer than its ", n, " parameters");
    parameters.push_back(stages[s].narrow(0, 0, n));
    buffers.push_back(stages[s].narrow(0, n, stages[s].numel() - n));
  }
  parameters.insert(parameters.end(), buffers.begin(), buffers.end());
  return at::cat(parameters);
}

}  // namespace troupe
