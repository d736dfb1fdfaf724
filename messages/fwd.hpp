// Forward declarations of every message type actors exchange (CAF convention: one fwd.hpp per
// component), so headers that only pass messages around need not include their definitions.
#pragma once

namespace troupe {

struct gradient_meta;
struct step_outcome;  ///< sent as update_meta
struct step_stats;
struct stage_timing;  ///< sent as stage_stats
struct eval_report;
struct micro_meta;
struct join_request;
struct join_reply;
struct ring_meta;
struct ring_places;
struct membership_note;
struct state_chunk;
struct worker_probe;
struct replacement_node;
struct weights_hand_in;
struct averaged_weights;
struct async_push;
struct server_weights;
struct hand_out;
struct socket_sum_end;
struct evaluated_weights;
struct checkpoint_part;
struct restored_state;
struct regroup_answer;
struct handed_state;
struct state_taken;
struct digest_report;
struct run_report;
enum class errc : unsigned char;

}  // namespace troupe
