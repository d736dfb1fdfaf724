// What a run folder says about how its run went, read back for `troupe report`: the records of
// metrics.jsonl (core/metrics/records.hpp) folded into series and totals, beside job.json,
// summary.json and plan.txt as they are. Reading works while the run is still writing: a last
// line cut off mid-write is skipped and counted, as is any other line that is not a record.
#pragma once

#include "core/metrics/jsonl_lines.hpp"
#include "core/metrics/records.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct step_row {
  int64_t step = 0;
  double t = 0;
  double loss = 0;
  double samples_per_s = 0;
  int64_t samples = 0;
  double lr = 0;  ///< of this step's update; 0 when not recorded
};

struct eval_row {
  int64_t step = 0;
  double t = 0;
  std::string split;  ///< "test" or "validation"
  double loss = 0;
  double accuracy = 0;
  int64_t member = -1;       ///< a stacked ensemble member's own evaluation; -1: the run's
  bool has_accuracy = true;  ///< false: the metric is mse or mae, accuracy is 0
};

/// A worker's time, summed over its steps: where the time went, and why scaling falls short.
struct worker_time {
  int64_t worker = 0;
  double compute_s = 0;
  double comm_s = 0;
  double apply_s = 0;
  double wait_s = 0;       ///< async: held back by the staleness bound
  double idle_s = 0;       ///< pipelines: the stage's share of the bubble
  double data_wait_s = 0;  ///< waiting for batches' rows
};

/// One pipeline stage's busy and idle time, summed over its steps.
struct stage_time {
  int64_t pipeline = 0;
  int64_t stage = 0;
  double busy_s = 0;
  double idle_s = 0;
};

/// Something that happened at a moment of the run: a checkpoint, a resume, a policy phase
/// taking over, a failure.
struct run_event {
  double t = 0;
  std::string kind;
  std::string label;
};

struct run_history {
  std::string folder;
  nlohmann::json job;      ///< job.json; null when absent
  nlohmann::json summary;  ///< summary.json; null while the run is going
  std::string plan;        ///< plan.txt; empty when absent
  std::vector<step_row> steps;
  std::vector<eval_row> evals;
  std::vector<eval_row> member_evals;    ///< stacked ensembles: each member's evaluations
  std::vector<worker_time> workers;      ///< by worker index
  std::vector<stage_time> stages;        ///< by pipeline, then stage
  std::map<int64_t, int64_t> staleness;  ///< async: applied gradients by staleness
  std::vector<run_event> events;
  /// A classification's final evaluation class by class; none before the run ends.
  std::optional<records::confusion> confusion;
  int64_t skipped_lines = 0;  ///< lines of metrics.jsonl that held no record

  std::string name() const;
  bool finished() const { return !summary.is_null(); }
};

/// A JSON file troupe writes (job.json, summary.json, leaderboard.json): null when absent;
/// throws data_error naming it when it is not a JSON object.
nlohmann::json read_json_object(const std::string& file);

/// Reads the run folder `folder`. Throws data_error naming the folder when it holds neither
/// metrics.jsonl nor summary.json, or naming the file when job.json or summary.json is not JSON.
run_history read_run_history(const std::string& folder);

/// Follows a run folder that is still being written: each refresh() reads only the lines
/// appended to metrics.jsonl since the last one (a line not yet finished waits for the next),
/// and job.json, summary.json and plan.txt again. A live report of an hour-long run then costs
/// per refresh what the run wrote since, not the whole file. A metrics.jsonl that is another
/// file than the one read so far (a run with --force, a file moved over it, one cut back by a
/// resume) is read again from its start.
class run_follower {
 public:
  explicit run_follower(std::string folder);
  /// Throws as read_run_history does.
  const run_history& refresh();

 private:
  /// Whether metrics.jsonl is still the file read so far; notes what it is when read from 0.
  bool same_metrics_file(const std::string& path);

  run_history history_;
  std::uintmax_t offset_ = 0;  ///< bytes of metrics.jsonl read so far
  /// What the file read so far is: its device and inode, and its first bytes (an inode can be
  /// reused by the next file at once; a new run's first records hold other timings).
  std::pair<uint64_t, uint64_t> file_id_{0, 0};
  std::string head_;
  jsonl_lines lines_;
};

/// Folds one metrics.jsonl object into `h` (what read_run_history does for each line); one
/// without an "event" name is counted in skipped_lines.
void fold_record(run_history& h, const nlohmann::json& record);

}  // namespace troupe
