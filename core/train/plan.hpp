// The plan of a run, stated before it starts (by `troupe run` and `troupe validate`): the
// policy, the replicas and their threads, the model's layers, the data and the number of steps,
// and what each worker sends and receives per step.
#pragma once

#include "core/config/job_config.hpp"
#include "core/device/device_plan.hpp"
#include "core/model/model_builder.hpp"
#include "core/pipeline/stage_split.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct run_plan {
  int64_t train_samples = 0;
  int64_t steps_per_epoch = 0;
  int64_t total_steps = 0;
  int64_t parameters = 0;
  std::vector<layer_summary> layers;
  std::vector<int64_t> rows_per_replica;  ///< rows of each global batch, by rank
  int64_t bytes_sent_per_step = 0;        ///< by each worker: its float32 gradient
  int64_t bytes_received_per_step = 0;    ///< by each worker: the combined gradient
  int64_t threads_total = 0;              ///< replicas x stages x intra-op threads
  unsigned hardware_threads = 0;
  /// Pipelines only: each stage's layers, the rows of each micro-batch (of replica 0), the
  /// floats per row crossing each stage boundary, and the ideal bubble fraction.
  std::vector<stage_slice> stages;
  std::vector<int64_t> micro_batch_rows;
  std::vector<int64_t> boundary_floats_per_row;  ///< by boundary: after stage 0, 1, ...
  double predicted_bubble = 0;
  device_plan devices;  ///< which device each worker computes on
};

/// Throws job_error if the data cannot fill a single global batch, or if the pipeline split
/// cannot work (more stages than layers with parameters, an unknown or misplaced boundary), or
/// if the job asks for devices `inventory` does not have.
run_plan make_plan(const job_config& job, int64_t train_samples, int64_t classes,
                   const device_inventory& inventory = local_inventory());

/// Human-readable, several lines, ending with a newline.
std::string render_plan(const job_config& job, const run_plan& plan);

}  // namespace troupe
