// The typed interfaces of troupe's actors: what each one accepts. Kept together because the
// run driver and its workers name each other's handles.
#pragma once

#include "messages/type_ids.hpp"

#include <caf/actor.hpp>
#include <caf/replies_to.hpp>
#include <caf/typed_actor.hpp>

namespace troupe {

/// A data-parallel replica: computes gradients on its shard; under sync applies combined ones
/// (or sums them with the other replicas in a ring or with NCCL), under local_sgd steps alone,
/// under async computes on weights the parameter server sends.
using replica_worker_actor = caf::typed_actor<
    caf::reacts_to<compute_atom, int64_t>, caf::reacts_to<link_atom, caf::actor>,
    caf::reacts_to<ring_atom, ring_meta, at::Tensor>, caf::reacts_to<ring_atom, socket_sum_end>,
    caf::reacts_to<nccl_atom, std::string>, caf::reacts_to<update_atom, update_meta, at::Tensor>,
    caf::reacts_to<averaged_atom, averaged_weights>, caf::reacts_to<params_atom, server_weights>,
    caf::reacts_to<advance_atom>, caf::reacts_to<checkpoint_atom, int64_t>,
    caf::reacts_to<restore_atom, restored_state>,
    caf::reacts_to<membership_atom, membership_note, caf::actor>,
    caf::reacts_to<handover_atom, int64_t>, caf::reacts_to<state_atom, state_chunk>,
    caf::reacts_to<evaluate_atom, int64_t>, caf::reacts_to<probe_atom>,
    caf::reacts_to<digest_atom, int64_t>, caf::reacts_to<link_atom, std::vector<caf::actor>>>;

/// A stacked ensemble's one worker: steps every member at once (core/ensemble/ensemble_engine)
/// as a replica alone would, its steps released, evaluated and checkpointed by the driver.
using ensemble_worker_actor =
    caf::typed_actor<caf::reacts_to<compute_atom, int64_t>, caf::reacts_to<advance_atom>,
                     caf::reacts_to<checkpoint_atom, int64_t>,
                     caf::reacts_to<restore_atom, restored_state>, caf::reacts_to<probe_atom>>;

/// A pipeline stage: runs its slice of the layers through the schedule of every step.
/// Neighbors are dynamically typed handles: a typed interface cannot name itself.
using stage_worker_actor = caf::typed_actor<
    caf::reacts_to<link_atom, caf::actor, caf::actor>, caf::reacts_to<compute_atom, int64_t>,
    caf::reacts_to<forward_atom, micro_meta, at::Tensor>,
    caf::reacts_to<backward_atom, micro_meta, at::Tensor>,
    caf::reacts_to<update_atom, update_meta, at::Tensor>, caf::reacts_to<evaluate_atom, int64_t>,
    caf::reacts_to<snapshot_atom, int64_t>, caf::reacts_to<checkpoint_atom, int64_t>,
    caf::reacts_to<restore_atom, restored_state>>;

/// async: the parameter server holds the master weights and the optimizer. It applies pushed
/// gradients, hands its weights to workers, evaluates, and answers with its final weights, all
/// in the order the driver asked.
using parameter_server_actor = caf::typed_actor<
    caf::reacts_to<apply_atom, double, int64_t, at::Tensor>,
    caf::reacts_to<hand_out_atom, hand_out>, caf::reacts_to<evaluate_atom, int64_t>,
    caf::replies_to<weights_atom>::with<at::Tensor>, caf::reacts_to<checkpoint_atom, int64_t>,
    caf::reacts_to<restore_atom, restored_state>>;

/// async with a sharded server: one shard, its slice of the weights and of the optimizer. The
/// server passes the driver's words on (the tensor of an apply is undefined: the gradient's
/// slice came from the worker, acknowledged before the worker told the driver); the server
/// gathers the slices for evaluations, checkpoints and the final weights.
using server_shard_actor =
    caf::typed_actor<caf::reacts_to<apply_atom, double, int64_t, at::Tensor>,
                     caf::reacts_to<hand_out_atom, hand_out>,
                     caf::replies_to<push_atom, async_push>::with<caf::ok_atom>,
                     caf::replies_to<weights_atom>::with<at::Tensor>,
                     caf::replies_to<checkpoint_atom, int64_t>::with<checkpoint_part>,
                     caf::reacts_to<restore_atom, restored_state>>;

/// The run driver: starts and monitors the workers, runs the policy's strategy, and answers the
/// run request with the report.
using run_driver_actor = caf::typed_actor<
    caf::replies_to<run_atom>::with<run_report>,
    caf::reacts_to<gradient_atom, gradient_meta, at::Tensor>,
    caf::reacts_to<average_atom, weights_hand_in>, caf::reacts_to<push_atom, async_push>,
    caf::reacts_to<step_stats>, caf::reacts_to<std::vector<step_stats>>,
    caf::reacts_to<stage_stats>, caf::reacts_to<eval_report>,
    caf::reacts_to<weights_atom, int64_t, at::Tensor>,
    caf::reacts_to<snapshot_atom, evaluated_weights>,
    caf::reacts_to<checkpoint_atom, checkpoint_part>, caf::reacts_to<watch_atom>,
    // a run that carries on when a node is lost (messages/membership.hpp)
    caf::reacts_to<membership_atom, regroup_answer>, caf::reacts_to<handover_atom, handed_state>,
    caf::reacts_to<taken_atom, state_taken>, caf::reacts_to<probe_atom, worker_probe>,
    caf::reacts_to<replace_atom, replacement_node>, caf::reacts_to<deadline_atom, int64_t>,
    caf::reacts_to<digest_atom, digest_report>>;

}  // namespace troupe
