// The records of metrics.jsonl read back as the structs core/metrics/records.hpp writes, one
// parser per kind beside its writer: the report, a suite's live table and stop_losers read
// records through these instead of by string keys of their own. A line troupe did not write
// (an unknown event, a field of the wrong type, an integer that fits no int64) is no record; a
// field that is missing keeps its default, so files of earlier versions still read.
//
// Thread safety: pure functions.
#pragma once

#include "core/metrics/records.hpp"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <variant>

namespace troupe::records {

using any_record = std::variant<step, worker_step, stage_step, eval, member_eval, applied, waited,
                                phase, failure, checkpoint, resumed, node_lost, step_redone,
                                node_joined, replicas_checked, confusion>;

/// The record a line of metrics.jsonl holds, or nullopt for one that holds none.
std::optional<any_record> parse_record(const nlohmann::json& line);

/// Whether `event` names a kind of record troupe writes.
bool is_known_event(const std::string& event);

/// What an aggregated per-step record (core/metrics/record_windows) stands for: its "steps" or
/// "count", 1 for a record of its own.
int64_t records_in(const nlohmann::json& line);

}  // namespace troupe::records
