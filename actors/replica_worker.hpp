// A replica worker actor: owns one model replica (a replica_engine) on its own thread.
//
// Protocol (see messages/training_step.hpp). sync: on (compute, s) it computes its gradient for
// step s and sends it to the coordinator; on (update, meta, combined) it applies the combined
// gradient, reports its timings, evaluates if asked, and then either computes step s+1 at once
// or, after the last step, sends its final weights. local_sgd: it steps on its own gradient;
// at averaging steps it sends its weights and continues once the average comes back. Any exception
// (LibTorch's included) ends the actor with an errc error that carries the message; the coordinator
// monitors it.
#pragma once

#include "actors/trusted_nodes.hpp"
#include "core/config/job_config.hpp"
#include "core/data/dataset.hpp"
#include "core/device/device_plan.hpp"
#include "core/pipeline/stage_split.hpp"
#include "core/policy/policy_schedule.hpp"
#include "messages/interfaces.hpp"

#include <memory>
#include <optional>

namespace troupe {

/// What every worker of a run shares, read-only.
struct replica_setup {
  job_config job;
  dataset_ptr data;
  at::Tensor initial_weights;  ///< flat; each worker copies it into its own model
  int64_t total_steps = 0;
  int64_t steps_per_epoch = 0;
  std::optional<policy_schedule> schedule;  ///< the policy of each step
  std::vector<stage_slice> stage_slices;    ///< pipelines only: each stage's layers
  /// Sync steps sum gradients in a ring among the replicas (each linked to its successor by
  /// (link_atom, successor)) instead of through the coordinator: the way across processes.
  bool ring = false;
  int64_t ring_bucket_elements = int64_t{1} << 20;
  /// Each worker's device, and whether sync replicas sum gradients with NCCL among themselves
  /// (a GPU each) or through the coordinator.
  device_plan devices;
  /// Nodes whose messages workers accept; null inside one process.
  std::shared_ptr<trusted_nodes> trusted;
};

/// Everything a run's workers share, for `job` on `data`: initial weights, steps, schedule and
/// (pipelines) the stage split. Across processes (job.cluster) sync reduces in a ring. Throws
/// job_error when this process lacks the devices the job asks for.
std::shared_ptr<replica_setup> make_replica_setup(const job_config& job, dataset_ptr data);

/// What workers do after applying step `step`'s update: evaluate, and whether it was the last.
update_meta update_after(const replica_setup& setup, int64_t step);

/// Spawns a worker on a thread of its own (detached: a step blocks it for the whole
/// forward/backward pass). The caller monitors it.
replica_worker_actor spawn_replica_worker(caf::actor_system& system,
                                          std::shared_ptr<const replica_setup> setup, int64_t rank,
                                          coordinator_actor coordinator);

}  // namespace troupe
