// A stacked ensemble's members as a run reports them: who each is (its seed and learning rate)
// and how it scored at its latest evaluation, from the sums an evaluation of the stacked model
// gives (core/ensemble/ensemble_engine). The run driver keeps these beside the ensemble's own
// figures; the report and the metrics' member_eval records carry them.
//
// Thread safety: pure functions.
#pragma once

#include "core/job/job_config.hpp"
#include "core/metrics/records.hpp"
#include "core/train/run_report.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

/// Member k of `job`'s ensemble: seed job.seed + k, its learning rate, no figures yet.
std::vector<member_report> member_reports(const job_config& job);

/// Each member's mean loss and accuracy over `count` rows from its sums, written into `members`
/// as its validation or test figures (`split`), and returned as member_eval records. Throws
/// std::invalid_argument when the sums are not one per member.
std::vector<records::member_eval> take_member_figures(std::vector<member_report>& members,
                                                      int64_t step, const std::string& split,
                                                      const std::vector<double>& loss_sums,
                                                      const std::vector<int64_t>& correct,
                                                      int64_t count);

}  // namespace troupe
