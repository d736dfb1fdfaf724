// What every worker of a run shares, read-only: the plan, the data, the weights every replica
// starts from, and (across processes) which nodes may talk to it.
#pragma once

#include "actors/trusted_nodes.hpp"
#include "core/data/dataset.hpp"
#include "core/run/run_plan.hpp"

#include <ATen/core/Tensor.h>

#include <memory>

namespace troupe {

struct worker_context {
  std::shared_ptr<const run_plan> plan;
  dataset_ptr data;
  at::Tensor initial_weights;  ///< flat; each worker copies it into its own model
  /// Nodes whose messages workers accept; null inside one process.
  std::shared_ptr<trusted_nodes> trusted;
};

using context_ptr = std::shared_ptr<const worker_context>;

/// The context of `plan` on `data`. Computes the initial weights with LibTorch's global
/// generator: call it from one thread, before any worker starts.
context_ptr make_worker_context(run_plan plan, dataset_ptr data,
                                std::shared_ptr<trusted_nodes> trusted = nullptr);

}  // namespace troupe
