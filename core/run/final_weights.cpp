#include "core/run/final_weights.hpp"

#include "core/pipeline/stage_weights.hpp"

#include <ATen/ATen.h>

namespace troupe {

assembled_weights assemble_final_weights(const std::vector<at::Tensor>& by_worker,
                                         int64_t pipelines, int64_t stages,
                                         const std::vector<int64_t>& stage_parameters) {
  TORCH_CHECK(static_cast<int64_t>(by_worker.size()) == pipelines * stages,
              "assemble_final_weights: ", by_worker.size(), " tensors for ", pipelines, " x ",
              stages, " workers");
  std::vector<at::Tensor> first_pipeline;
  for (int64_t s = 0; s < stages; ++s) {
    const auto& first = by_worker[static_cast<std::size_t>(s)];
    for (int64_t p = 1; p < pipelines; ++p) {
      const auto& other = by_worker[static_cast<std::size_t>(p * stages + s)];
      if (!other.sizes().equals(first.sizes()) || !at::equal(other, first))
        return {at::Tensor(), (stages > 1 ? "stage " + std::to_string(s) + " of " : std::string()) +
                                  "replica " + std::to_string(p) +
                                  " ended with weights different from replica 0"};
    }
    first_pipeline.push_back(first);
  }
  return {model_weights_of_stages(first_pipeline, stage_parameters), ""};
}

}  // namespace troupe
