// Every type and atom that crosses an actor boundary, in one CAF type-ID block. Register it
// with cfg.add_message_types<caf::id_block::troupe>() (actors/cluster/system_config does).
#pragma once

#include "core/train/run_report.hpp"
#include "messages/cluster.hpp"
#include "messages/membership.hpp"
#include "messages/pipeline_step.hpp"
#include "messages/telemetry.hpp"
#include "messages/tensor_wire.hpp"
#include "messages/training_step.hpp"
#include "messages/worker_state.hpp"

#include <ATen/core/Tensor.h>
#include <caf/allowed_unsafe_message_type.hpp>
#include <caf/atom.hpp>
#include <caf/type_id.hpp>

#include <vector>

// Tensors travel by handle inside a process and as checked bytes between processes
// (messages/tensor_wire.hpp). A run report only ever goes to the local caller of a run: marking
// it unsafe keeps CAF from trying to serialize it, so a remote send would fail loudly.
CAF_ALLOW_UNSAFE_MESSAGE_TYPE(troupe::run_report)

CAF_BEGIN_TYPE_ID_BLOCK(troupe, caf::first_custom_type_id)
CAF_ADD_TYPE_ID(troupe, (troupe::gradient_meta))
CAF_ADD_TYPE_ID(troupe, (troupe::update_meta))
CAF_ADD_TYPE_ID(troupe, (troupe::step_stats))
CAF_ADD_TYPE_ID(troupe, (std::vector<troupe::step_stats>))
CAF_ADD_TYPE_ID(troupe, (troupe::eval_report))
CAF_ADD_TYPE_ID(troupe, (at::Tensor))
CAF_ADD_TYPE_ID(troupe, (troupe::run_report))
CAF_ADD_TYPE_ID(troupe, (troupe::micro_meta))
CAF_ADD_TYPE_ID(troupe, (troupe::stage_stats))
CAF_ADD_TYPE_ID(troupe, (troupe::join_request))
CAF_ADD_TYPE_ID(troupe, (troupe::join_reply))
CAF_ADD_TYPE_ID(troupe, (troupe::ring_meta))
CAF_ADD_TYPE_ID(troupe, (troupe::ring_places))
CAF_ADD_TYPE_ID(troupe, (troupe::membership_note))
CAF_ADD_TYPE_ID(troupe, (troupe::state_chunk))
CAF_ADD_TYPE_ID(troupe, (troupe::worker_probe))
CAF_ADD_TYPE_ID(troupe, (troupe::replacement_node))
CAF_ADD_TYPE_ID(troupe, (troupe::shipment))
CAF_ADD_TYPE_ID(troupe, (troupe::weights_hand_in))
CAF_ADD_TYPE_ID(troupe, (troupe::averaged_weights))
CAF_ADD_TYPE_ID(troupe, (troupe::async_push))
CAF_ADD_TYPE_ID(troupe, (troupe::server_weights))
CAF_ADD_TYPE_ID(troupe, (troupe::hand_out))
CAF_ADD_TYPE_ID(troupe, (troupe::socket_sum_end))
CAF_ADD_TYPE_ID(troupe, (troupe::evaluated_weights))
CAF_ADD_TYPE_ID(troupe, (troupe::checkpoint_part))
CAF_ADD_TYPE_ID(troupe, (troupe::restored_state))
CAF_ADD_TYPE_ID(troupe, (troupe::regroup_answer))
CAF_ADD_TYPE_ID(troupe, (troupe::handed_state))
CAF_ADD_TYPE_ID(troupe, (troupe::state_taken))
CAF_ADD_TYPE_ID(troupe, (troupe::digest_report))
CAF_ADD_TYPE_ID(troupe, (troupe::host_segment))
CAF_ADD_ATOM(troupe, troupe, compute_atom, "compute")
CAF_ADD_ATOM(troupe, troupe, gradient_atom, "gradient")
CAF_ADD_ATOM(troupe, troupe, update_atom, "update")
CAF_ADD_ATOM(troupe, troupe, weights_atom, "weights")
CAF_ADD_ATOM(troupe, troupe, run_atom, "run")
CAF_ADD_ATOM(troupe, troupe, average_atom, "average")
CAF_ADD_ATOM(troupe, troupe, averaged_atom, "averaged")
CAF_ADD_ATOM(troupe, troupe, params_atom, "params")
CAF_ADD_ATOM(troupe, troupe, push_atom, "push")
CAF_ADD_ATOM(troupe, troupe, forward_atom, "forward")
CAF_ADD_ATOM(troupe, troupe, backward_atom, "backward")
CAF_ADD_ATOM(troupe, troupe, evaluate_atom, "evaluate")
CAF_ADD_ATOM(troupe, troupe, link_atom, "link")
CAF_ADD_ATOM(troupe, troupe, ring_atom, "ring")
CAF_ADD_ATOM(troupe, troupe, trust_atom, "trust")
CAF_ADD_ATOM(troupe, troupe, done_atom, "done")
CAF_ADD_ATOM(troupe, troupe, nccl_atom, "nccl")
CAF_ADD_ATOM(troupe, troupe, apply_atom, "apply")
CAF_ADD_ATOM(troupe, troupe, hand_out_atom, "handout")
CAF_ADD_ATOM(troupe, troupe, snapshot_atom, "snapshot")
CAF_ADD_ATOM(troupe, troupe, checkpoint_atom, "checkpoint")
CAF_ADD_ATOM(troupe, troupe, restore_atom, "restore")
CAF_ADD_ATOM(troupe, troupe, advance_atom, "advance")
CAF_ADD_ATOM(troupe, troupe, watch_atom, "watch")
CAF_ADD_ATOM(troupe, troupe, membership_atom, "members")
CAF_ADD_ATOM(troupe, troupe, handover_atom, "handover")
CAF_ADD_ATOM(troupe, troupe, state_atom, "state")
CAF_ADD_ATOM(troupe, troupe, taken_atom, "taken")
CAF_ADD_ATOM(troupe, troupe, probe_atom, "probe")
CAF_ADD_ATOM(troupe, troupe, leave_atom, "leave")
CAF_ADD_ATOM(troupe, troupe, replace_atom, "replace")
CAF_ADD_ATOM(troupe, troupe, deadline_atom, "deadline")
CAF_ADD_ATOM(troupe, troupe, chunk_atom, "chunk")
CAF_ADD_ATOM(troupe, troupe, shm_atom, "shm")
CAF_ADD_ATOM(troupe, troupe, digest_atom, "digest")
CAF_ADD_ATOM(troupe, troupe, challenge_atom, "challenge")
CAF_ADD_ATOM(troupe, troupe, shard_atom, "shard")
CAF_END_TYPE_ID_BLOCK(troupe)
