// The run's final weights from what the workers handed in after the last step. Replicas apply
// identical updates (and local SGD ends on an average), so the same stage of every pipeline (or
// every replica, a pipeline of one stage) must agree bit for bit: a difference is a bug, and the
// run fails naming the first replica that differs.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct assembled_weights {
  at::Tensor flat;    ///< the whole model's weights; undefined when `error` is set
  std::string error;  ///< "replica 2 ended with weights different from replica 0"
};

/// `by_worker[p * stages + s]` is stage s of pipeline p; every entry must be defined. Stages 0
/// to stages - 1 of pipeline 0 make the model's flat weights (core/pipeline/stage_weights:
/// `stage_parameters` puts their buffers behind every parameter; empty: concatenated).
assembled_weights assemble_final_weights(const std::vector<at::Tensor>& by_worker,
                                         int64_t pipelines, int64_t stages,
                                         const std::vector<int64_t>& stage_parameters = {});

}  // namespace troupe
