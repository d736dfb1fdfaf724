// Reports workers send the run driver beside the step protocol: timings of each step and the
// results of evaluations. Plain values only, so they can cross processes unchanged.
#pragma once

#include <caf/meta/type_name.hpp>

#include <cstdint>
#include <vector>

namespace troupe {

struct step_stats {
  int64_t worker = 0;
  int64_t step = 0;
  double loss = 0;         ///< mean over the worker's rows
  int64_t samples = 0;     ///< the worker's rows in this step
  double compute_s = 0;    ///< forward + backward
  double comm_s = 0;       ///< gradient sent -> combined gradient received
  double apply_s = 0;      ///< copy in + optimizer step
  double span_s = 0;       ///< since the end of the worker's previous step (0: not measured)
  double data_wait_s = 0;  ///< waiting for the batch's rows (not in compute_s)
  /// fp16: the loss scale after this step's update, and the steps skipped so far for an
  /// overflowed gradient (core/train/loss_scaler); 0 and 0 for other precisions.
  double loss_scale = 0;
  int64_t skipped_steps = 0;
  /// Sync among the workers: the rows the sum this worker applied holds, as the sum's rows slot
  /// says (core/model/flat_parameters): every live replica's at the time, a lost one's too when
  /// its gradient was summed. 0: not known (the driver summed, or the sum stayed on a GPU).
  int64_t sum_rows = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, step_stats& x) {
  return f(caf::meta::type_name("step_stats"), x.worker, x.step, x.loss, x.samples, x.compute_s,
           x.comm_s, x.apply_s, x.span_s, x.data_wait_s, x.loss_scale, x.skipped_steps, x.sum_rows);
}

struct eval_report {
  int64_t worker = 0;
  int64_t step = 0;
  double loss_sum = 0;
  double metric_sum = 0;  ///< core/train/loss: summed over rows, like loss_sum
  int64_t count = 0;
  double eval_s = 0;
  /// How many shards the evaluation set was split into (the live replicas when it was
  /// evaluated); 0: the plan's number (stages, the parameter server).
  int64_t of = 0;
  /// A stacked ensemble: each member's sums (the ones above are of the averaged prediction);
  /// empty for every other run.
  std::vector<double> member_loss_sums{};
  std::vector<int64_t> member_correct{};
  /// Classification: the shard's confusion counts (core/train/confusion), else empty.
  std::vector<int64_t> confusion{};
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, eval_report& x) {
  return f(caf::meta::type_name("eval_report"), x.worker, x.step, x.loss_sum, x.metric_sum, x.count,
           x.eval_s, x.of, x.member_loss_sums, x.member_correct, x.confusion);
}

}  // namespace troupe
