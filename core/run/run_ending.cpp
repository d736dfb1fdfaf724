#include "core/run/run_ending.hpp"

#include "core/optim/lr_schedule.hpp"
#include "core/train/confusion.hpp"
#include "core/train/loss.hpp"

#include <algorithm>

namespace troupe {

tracker_options tracking_of(const run_plan& plan) {
  tracker_options o;
  o.validation = plan.data.validation_rows > 0;
  o.metric = metric_name(plan.job.training.loss);
  o.lockstep = plan.job.parallelism.policy != policy_kind::async;
  o.learning_rate = [optimizer = plan.job.optimizer, total = plan.rules.total_steps()](int64_t s) {
    return learning_rate(optimizer, s, total);
  };
  return o;
}

std::string stop_reason(const run_options& options, const step_rules& rules, int64_t step) {
  if (options.stop_requested == nullptr || !options.stop_requested->load() || rules.is_last(step))
    return "";
  // Messages count steps ("after 3 steps"); `step` is the 0-based index of the last one, as in
  // metrics.jsonl, so that the count matches summary.json's "steps".
  const auto done = step + 1;
  return "interrupted after " + std::to_string(done) + (done == 1 ? " step" : " steps");
}

void record_test_evaluation(const run_plan& plan, const run_options& options, run_report& report,
                            int64_t step, const char* weights, double loss_sum, double metric_sum,
                            int64_t count, double eval_s, const std::vector<int64_t>& confusion) {
  const double n = static_cast<double>(std::max<int64_t>(count, 1));
  report.test_loss = loss_sum / n;
  report.test_accuracy = metric_sum / n;
  report.wall_s += eval_s;  // the run ends after this evaluation; train_s leaves it out
  if (options.metrics != nullptr)
    options.metrics->write(to_json(records::eval{step, plan.rules.epoch_of(step), "test",
                                                 *report.test_loss, *report.test_accuracy, count,
                                                 eval_s, report.wall_s, weights, report.metric}));
  if (options.metrics != nullptr && !confusion.empty())
    options.metrics->write(to_json(records::confusion{step, "test", confusion_classes(confusion),
                                                      confusion, weights, report.wall_s}));
}

run_report end_run(run_tracker& tracker, const run_plan& plan, const std::string& error,
                   at::Tensor weights, run_status failed_as) {
  try {
    // The final evaluation class by class; a run with a validation set writes the test set's
    // with its one evaluation at the end (record_test_evaluation) instead.
    if (error.empty() && plan.data.validation_rows == 0)
      tracker.record_last_confusion();
    tracker.flush_records();
  } catch (const std::exception&) {
    // As below: a full disk must not hide how the run ended.
  }
  if (!error.empty()) {
    try {
      tracker.record(records::failure{error, 0});
    } catch (const std::exception&) {
      // The run is ending anyway; the caller still gets the error through the report.
    }
  }
  auto report = tracker.report(error, error.empty() ? std::move(weights) : at::Tensor());
  report.replicas = plan.job.parallelism.replicas;  // the tracker counts workers
  report.skipped_inputs = plan.data.skipped_rows;
  if (!error.empty())
    report.status = failed_as;
  return report;
}

}  // namespace troupe
