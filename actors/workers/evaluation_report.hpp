// The message a worker's evaluation of its shard sends the run driver, from the engine's sums.
#pragma once

#include "core/train/replica_engine.hpp"
#include "messages/telemetry.hpp"

#include <utility>

namespace troupe {

/// `of`: the shards the evaluation set was cut into (0: the plan's number).
inline eval_report evaluation_report(int64_t worker, int64_t step, evaluation_result r,
                                     double eval_s, int64_t of = 0) {
  eval_report report{worker, step, r.loss_sum, r.metric_sum, r.count, eval_s, of};
  report.confusion = std::move(r.confusion);
  return report;
}

}  // namespace troupe
