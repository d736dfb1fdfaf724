// The failures a run survived and how long each took, for summary.json: a lost node's
// detection time (from the last message the driver had from it to the loss being noticed) and
// its recovery time (from that last sign of life to the next step committed after the
// survivors regrouped), and the replacements that joined. Their p50 and p99 summarize a run
// with many (the chaos test).
//
// Thread safety: none; owned by the run tracker.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct failure_entry {
  std::string node;
  std::vector<int64_t> workers;
  std::string reason;
  int64_t step = 0;                  ///< the first step not complete when it was noticed
  double t = 0;                      ///< run time when it was noticed
  double detection_s = 0;            ///< last sign of life -> noticed
  std::optional<double> recovery_s;  ///< last sign of life -> next committed step
};

struct join_entry {
  std::string node;
  std::vector<int64_t> workers;
  int64_t step = 0;  ///< the first step it computed
  double t = 0;
};

/// The p-th percentile (0..100) of `values` by linear interpolation between closest ranks (as
/// numpy.percentile); nullopt for none.
std::optional<double> percentile(std::vector<double> values, double p);

class failure_log {
 public:
  /// A node was lost, noticed at run time `t`.
  void lost(failure_entry e);
  /// The survivors regrouped: failures not yet recovered recover at the first step from
  /// `first_step` on that completes (the steps before it were computed before the failure).
  void regrouped(int64_t first_step);
  /// Without a regroup (async), the next step that completes recovers them.
  void recover_at_next_step() { recover_from_ = 0; }
  /// A step completed at run time `t`.
  void completed(int64_t step, double t);
  void joined(join_entry e) { joins_.push_back(std::move(e)); }

  bool empty() const { return failures_.empty() && joins_.empty(); }
  const std::vector<failure_entry>& failures() const { return failures_; }
  /// summary.json's "failures", "failure_times" (p50/p99 of detection and recovery) and
  /// "joins"; an empty object when there were none.
  nlohmann::json summary() const;
  /// For a checkpoint, and back.
  nlohmann::json save() const;
  void restore(const nlohmann::json& saved);

 private:
  std::vector<failure_entry> failures_;
  std::vector<join_entry> joins_;
  int64_t recover_from_ = std::numeric_limits<int64_t>::max();
};

}  // namespace troupe
