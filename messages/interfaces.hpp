// The typed interfaces of troupe's actors: what each one accepts. Kept together because the
// coordinator and its workers name each other's handles.
#pragma once

#include "messages/type_ids.hpp"

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

namespace troupe {

/// A data-parallel replica: computes gradients on its shard; under sync applies combined ones
/// (or, across processes, sums them in a ring with its successor), under local_sgd steps alone,
/// under async computes on weights the coordinator sends.
using replica_worker_actor =
    caf::typed_actor<caf::reacts_to<compute_atom, int64_t>, caf::reacts_to<link_atom, caf::actor>,
                     caf::reacts_to<ring_atom, ring_meta, at::Tensor>,
                     caf::reacts_to<nccl_atom, std::string>,
                     caf::reacts_to<update_atom, update_meta, at::Tensor>,
                     caf::reacts_to<averaged_atom, update_meta, at::Tensor, at::Tensor>,
                     caf::reacts_to<params_atom, int64_t, int64_t, at::Tensor>>;

/// The coordinator: runs a job to the end and answers the run request with its report.
using coordinator_actor =
    caf::typed_actor<caf::replies_to<run_atom>::with<run_report>,
                     caf::reacts_to<gradient_atom, gradient_meta, at::Tensor>,
                     caf::reacts_to<average_atom, gradient_meta, at::Tensor, at::Tensor>,
                     caf::reacts_to<push_atom, gradient_meta, int64_t, at::Tensor>,
                     caf::reacts_to<step_stats>, caf::reacts_to<eval_report>,
                     caf::reacts_to<weights_atom, int64_t, at::Tensor>>;

/// A pipeline stage: runs its slice of the layers through the schedule of every step.
/// Neighbors are dynamically typed handles: a typed interface cannot name itself.
using stage_worker_actor = caf::typed_actor<
    caf::reacts_to<link_atom, caf::actor, caf::actor>, caf::reacts_to<compute_atom, int64_t>,
    caf::reacts_to<forward_atom, micro_meta, at::Tensor>,
    caf::reacts_to<backward_atom, micro_meta, at::Tensor>,
    caf::reacts_to<update_atom, update_meta, at::Tensor>, caf::reacts_to<evaluate_atom, int64_t>>;

/// The coordinator of pipelined runs (stages > 1 or micro_batches > 1).
using pipeline_coordinator_actor =
    caf::typed_actor<caf::replies_to<run_atom>::with<run_report>,
                     caf::reacts_to<gradient_atom, gradient_meta, at::Tensor>,
                     caf::reacts_to<stage_stats>, caf::reacts_to<eval_report>,
                     caf::reacts_to<weights_atom, int64_t, at::Tensor>>;

}  // namespace troupe
