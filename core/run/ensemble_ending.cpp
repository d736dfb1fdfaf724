#include "core/run/ensemble_ending.hpp"

#include "core/ensemble/ensemble_engine.hpp"
#include "core/ensemble/member_figures.hpp"
#include "core/run/run_ending.hpp"

#include <chrono>

namespace troupe {
namespace {

// Every member and the averaged prediction on the test set, after `step`.
void evaluate_test_set(const run_plan& plan, const ensemble_engine& engine,
                       const run_options& options, run_report& report) {
  const auto step = report.stopped_early_at.value_or(plan.rules.total_steps() - 1);
  const auto start = std::chrono::steady_clock::now();
  const auto r = engine.evaluate(engine.data()->test);
  const double eval_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (auto e : take_member_figures(report.members, step, "test", r.loss_sum, r.correct, r.count)) {
    e.t = report.wall_s + eval_s;
    if (options.metrics != nullptr)
      options.metrics->write(to_json(e));
  }
  record_test_evaluation(plan, options, report, step, "final", r.ensemble_loss_sum,
                         static_cast<double>(r.ensemble_correct), r.count, eval_s, r.confusion);
}

}  // namespace

void finish_ensemble_report(const run_plan& plan, const dataset_ptr& data,
                            const run_options& options, run_report& report) {
  if (!report.succeeded())
    return;
  ensemble_engine engine(ensemble_plan_of(plan), data);
  engine.set_weights(report.final_weights);
  report.final_weights = at::Tensor();
  for (int64_t k = 0; k < engine.members(); ++k)
    report.member_weights.push_back(engine.member_weights(k));
  if (plan.data.validation_rows > 0)
    evaluate_test_set(plan, engine, options, report);
}

}  // namespace troupe
