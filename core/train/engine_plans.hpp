// What an engine computes from: its slice of a run's plan, never the job file. A replica's
// engine (core/train/replica_engine) gets the model, optimizer and training settings, the seed,
// the global batch and its own rows of it; an ensemble's (core/ensemble/ensemble_engine) the
// same settings and its members; a stage's (core/train/stage_engine) its layers, its
// place in the pipeline, its pipeline's rows and the micro-batches they are cut into. The plan
// hands them out (core/run/worker_slices), so rows and micro-batches are decided in one place.
//
// Thread safety: plain values.
#pragma once

#include "core/data/batch_plan.hpp"
#include "core/job/job_config.hpp"
#include "core/pipeline/stage_split.hpp"

#include <cstdint>
#include <vector>

namespace troupe {

/// The settings every engine trains with.
struct training_settings {
  model_config model;
  optimizer_config optimizer;
  training_config training;  ///< the loss and gradient clipping
  uint64_t seed = 0;
  int64_t global_batch = 0;
  int64_t prefetch = 0;  ///< batches a worker's loader gathers ahead (data.prefetch)
};

struct replica_plan {
  training_settings settings;
  int64_t rank = 0;
  int64_t replicas = 1;  ///< sharing each global batch at the start
  row_range rows;        ///< this replica's rows of every global batch at the start
};

/// Where a stage sits: stage `stage` of `stages` in pipeline (replica) `pipeline` of `pipelines`.
struct stage_position {
  int64_t stage = 0;
  int64_t stages = 1;
  int64_t pipeline = 0;
  int64_t pipelines = 1;
  bool first() const { return stage == 0; }
  bool last() const { return stage + 1 == stages; }
};

struct stage_plan {
  training_settings settings;
  stage_slice layers;  ///< this stage's top-level children [begin, end) of the model
  stage_position where;
  row_range rows;                        ///< this pipeline's rows of every global batch
  std::vector<row_range> micro_batches;  ///< `rows` cut into micro-batches, as absolute rows
};

/// A stacked ensemble's one worker: the settings every member shares, and how the members
/// differ (their number, learning rates, data orders).
struct ensemble_plan {
  training_settings settings;
  ensemble_config ensemble;
};

/// The settings of `job` (resolved: what a plan holds).
training_settings settings_of(const job_config& job);

/// Replica `rank`'s slice of `job`'s batches.
replica_plan replica_plan_of(const job_config& job, int64_t rank);

/// The ensemble worker's slice of `job`.
ensemble_plan ensemble_plan_of(const job_config& job);

/// The slice of stage `where` (of the stages `layers` of `job`).
stage_plan stage_plan_of(const job_config& job, const stage_slice& layers, stage_position where);

}  // namespace troupe
