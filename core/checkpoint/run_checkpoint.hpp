// What a checkpoint of a run holds, and its files: everything needed to continue exactly after
// `step`. The weights and optimizer state of each part (a replica, a pipeline stage of pipeline
// 0, the parameter server, or the stacked ensemble); the counters of the tracker, the strategy
// and the validation keeper; the best weights so far; the resolved job. Nothing else affects a
// run: the batch order, the schedule and the learning rate are pure functions of the step, and
// the built-in models draw no random numbers after their initialization.
//
// Files: weights.pt (the model's weights by PyTorch's state_dict names, loadable with
// torch.load), state.pt (every part's flat weights and optimizer bytes, and the best weights),
// state.json (step, job, counters).
#pragma once

#include "core/checkpoint/checkpoint_store.hpp"

#include <ATen/core/Tensor.h>
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

/// One part's state at a step boundary.
struct part_state {
  int64_t part = 0;       ///< rank, stage, or 0 (the parameter server, the ensemble)
  at::Tensor weights;     ///< flat, on the CPU
  std::string optimizer;  ///< save_optimizer's bytes
};

struct run_checkpoint {
  int64_t step = -1;  ///< the last step whose update the state holds
  nlohmann::json job;
  nlohmann::json progress;  ///< {"tracker": ..., "strategy": ..., "keeper": ...}
  std::vector<part_state> parts;
  at::Tensor best_weights;  ///< keep_best's, when there is one
  /// local_sgd with an outer optimizer: the weights the replicas started the round from, and
  /// the outer momentum buffer (undefined before the first outer step).
  at::Tensor outer_base;
  at::Tensor outer_momentum;
  /// local_sgd with compression: the last average, the base the replicas' and the driver's
  /// packed changes are taken against (undefined before the first whole average). Without it a
  /// resumed run handed in whole where the run never stopped sent rounded changes.
  at::Tensor average_base;
};

using parameter_layout = std::vector<std::pair<std::string, std::vector<int64_t>>>;

/// The files of `c`. `stages` > 1: the parts are a pipeline's stages, whose weights make the
/// model's (core/pipeline/stage_weights, with `stage_parameters`); else part 0's weights are the
/// model's. `layout` names them for weights.pt
/// (empty: no weights.pt, e.g. for a stacked ensemble).
stored_checkpoint encode_checkpoint(const run_checkpoint& c, int64_t stages,
                                    const parameter_layout& layout,
                                    const std::vector<int64_t>& stage_parameters = {});

/// Throws std::runtime_error naming what is missing or malformed, or where state.json
/// disagrees with the manifest (its step, its job's digest).
run_checkpoint decode_checkpoint(const stored_checkpoint& stored);

/// The SHA-256 (hex) of a resolved job (job.json, a checkpoint's job) that names the run it
/// belongs to. The node count is left out: a resume may change it (--local-nodes).
std::string job_digest(const nlohmann::json& job);

}  // namespace troupe
