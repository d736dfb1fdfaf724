// The plan of a run: everything decided before an actor starts, computed once from the job and
// the facts of its data, then read by everyone. `troupe validate` prints it, `troupe run`
// executes it, and nothing downstream derives any of it again: the steps and when to evaluate,
// the batch split, the policy of each step, the pipeline's stage slices, each worker's device,
// where the gradients of a sync step meet, and what the model and data are.
//
// Thread safety: immutable once made; shared read-only by every actor of a run.
#pragma once

#include "core/collective/ring_options.hpp"
#include "core/data/data_source.hpp"
#include "core/device/device_plan.hpp"
#include "core/job/job_config.hpp"
#include "core/model/model_builder.hpp"
#include "core/pipeline/stage_split.hpp"
#include "core/policy/policy_schedule.hpp"
#include "core/policy/server_shards.hpp"
#include "core/policy/step_rules.hpp"
#include "core/train/engine_plans.hpp"

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace troupe {

/// How the run's workers are arranged.
enum class run_mode {
  replicas,  ///< data-parallel replicas, one actor each
  pipeline,  ///< replicas x stages stage actors (also micro-batching with one stage)
  ensemble,  ///< one stacked model of many members on one worker
};

/// Where the replicas' gradients of a sync step are summed. Both the driver (which strategy it
/// runs) and the workers (what they do with a gradient) read this one decision.
enum class gradient_meeting {
  local,   ///< one replica: nothing to combine, each worker applies its own gradient
  driver,  ///< every worker sends its gradient to the run driver, which sums them in rank order
  ring,    ///< across processes: the replicas sum among themselves in a ring all-reduce
  nccl,    ///< a GPU each: the replicas sum among themselves with NCCL all-reduce
  shared,  ///< CPU replicas of one process: each sums a slice of all the gradients in shared
           ///< memory (core/collective/replica_reduction), the driver only counts
};

const char* to_string(run_mode x);
const char* to_string(gradient_meeting x);

/// The model as the plan knows it: its layers and the names and shapes of its parameters
/// (PyTorch's state_dict keys), which name the saved weights.
/// The flat weights are the parameters, then the buffers' values (core/model/flat_parameters).
struct model_facts {
  int64_t parameters = 0;
  int64_t buffer_values = 0;  ///< BatchNorm's running statistics and the like
  /// What the layers output for one row, summed (built-in models; 0 where not known).
  int64_t activation_values_per_row = 0;
  std::vector<layer_summary> layers;
  std::vector<std::pair<std::string, std::vector<int64_t>>> parameter_layout;
  /// Random operators its forward reaches (aten::dropout, ...): core/model/random_draws.
  std::vector<std::string> random_ops;
  int64_t flat_size() const { return parameters + buffer_values; }
  /// The flat gradient a sync step sums among the workers: flat_size() values and the rows slot
  /// behind them (flat_parameters::gradient_with_rows).
  int64_t summed_size() const { return flat_size() + 1; }
};

struct run_plan {
  job_config job;
  data_facts data;
  model_facts model;
  run_mode mode = run_mode::replicas;
  step_rules rules;
  policy_schedule schedule;  ///< the policy of each step (a plain policy is one phase)
  /// Actors that train: replicas, replicas x stages, or the one ensemble worker.
  int64_t workers = 1;
  std::vector<int64_t> rows_per_replica;  ///< rows of each global batch, by rank
  device_plan devices;                    ///< which device each worker computes on
  gradient_meeting gradients = gradient_meeting::local;
  ring_options ring;  ///< how every ring all-reduce of the run moves its buckets
  /// Pipelines only: each stage's layers, the rows of each micro-batch (of replica 0), the
  /// floats per row crossing each stage boundary, and the ideal bubble fraction.
  std::vector<stage_slice> stages;
  std::vector<int64_t> micro_batch_rows;
  std::vector<int64_t> boundary_floats_per_row;  ///< by boundary: after stage 0, 1, ...
  double predicted_bubble = 0;
  int64_t bytes_sent_per_step = 0;      ///< by each worker: its float32 gradient (mean)
  int64_t bytes_received_per_step = 0;  ///< by each worker: the combined gradient (mean)
  int64_t threads_total = 0;            ///< replicas x stages x intra-op threads
  unsigned hardware_threads = 0;
  bool threads_chosen = false;  ///< the job left threads_per_replica to the plan

  /// The learning rate of optimizer step `step` (core/optim/lr_schedule).
  double lr_at(int64_t step) const;
  /// Workers hand in the weights of every evaluation (keep_best or early stopping).
  bool snapshots() const {
    return job.training.keep_best.has_value() || job.training.early_stopping.has_value();
  }
  /// async: a parameter server holds the weights and the optimizer.
  bool parameter_server() const { return job.parallelism.policy == policy_kind::async; }
  /// async: the server's shards (parallelism.ps_shards; by default one per node across nodes,
  /// else one). 0 for the other policies.
  int64_t server_shards() const;
  /// async with more than one shard: the workers push and pull slices to and from each shard.
  bool sharded_server() const { return server_shards() > 1; }
  /// The most steps one worker may run: total_steps, or under async every push of the run
  /// (replicas x steps) when one worker is that much quicker than the rest.
  int64_t worker_steps() const;
  /// The parts a checkpoint of the run holds (core/checkpoint/run_checkpoint.hpp): pipeline
  /// 0's stages; one (sync replicas hold the same state; the server; the ensemble); else every
  /// replica's, whose optimizers (and, between averages, weights) are their own.
  int64_t checkpoint_parts() const;
  /// How many shards each evaluation is split into (each pipeline or replica evaluates its
  /// share; the parameter server or the ensemble evaluates all of it).
  int64_t eval_shards() const;
  /// A pipeline's stages' parameter counts, to put their flat weights in the model's order
  /// (core/pipeline/stage_weights); empty for other runs.
  std::vector<int64_t> stage_parameters() const;
};

/// Plans `job` on data with `data`'s facts. Throws job_error if the data cannot fill a global
/// batch, a phase would start after the last step, the pipeline split cannot work, or the job
/// asks for devices `inventory` does not have.
run_plan make_run_plan(const job_config& job, const data_facts& data,
                       const device_inventory& inventory = local_inventory());

/// The intra-op threads each worker of `job` gets: the job's `threads_per_replica`, or when it
/// does not say, the machine's `hardware_threads` shared evenly among the workers of this
/// process (replicas x stages; an ensemble's members train one at a time), at least 1. Run over
/// nodes, 1: the replicas live in the node processes, which offer their own threads. Filling
/// the cores this way is the fastest arrangement measured (bench/sync_overhead.py: 1 replica x 2
/// threads beats 1 x 1 by 1.6x on 2 cores).
int64_t intra_op_threads(const job_config& job, unsigned hardware_threads);

/// Replica `rank`'s slice of the plan: what its engine computes from.
replica_plan replica_plan_of(const run_plan& plan, int64_t rank);
/// The stacked ensemble's worker's slice of the plan.
ensemble_plan ensemble_plan_of(const run_plan& plan);
/// Stage `stage` of pipeline `pipeline`: its layers, place, rows and micro-batches.
stage_plan stage_plan_of(const run_plan& plan, int64_t pipeline, int64_t stage);

/// The parameter server's shards over the plan's model (core/policy/server_shards).
std::vector<server_shard> server_shards_of(const run_plan& plan);
/// local_sgd's streaming fragments over the plan's model, cut as the server's shards are (one,
/// the whole model, without parallelism.fragments).
std::vector<server_shard> fragments_of(const run_plan& plan);
/// The streaming fragment the replicas average after `step` (policy_schedule::fragment_after),
/// or none where they average the whole model or nothing: what the workers hand in and the
/// driver averages, both from this one answer.
std::optional<server_shard> fragment_after(const run_plan& plan, int64_t step);

/// Human-readable, several lines, ending with a newline.
std::string render_plan(const run_plan& plan);

/// The flat weights cut into the model's named parameters (what final_weights.pt holds).
std::vector<std::pair<std::string, at::Tensor>> named_weights(const run_plan& plan,
                                                              const at::Tensor& flat);

}  // namespace troupe
