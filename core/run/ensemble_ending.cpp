#include "core/run/ensemble_ending.hpp"

#include "core/ensemble/ensemble_engine.hpp"
#include "core/ensemble/member_figures.hpp"

#include <chrono>

namespace troupe {
namespace {

void write(const run_options& options, const nlohmann::json& record) {
  if (options.metrics != nullptr)
    options.metrics->write(record);
}

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
    write(options, to_json(e));
  }
  const double n = static_cast<double>(std::max<int64_t>(r.count, 1));
  report.test_loss = r.ensemble_loss_sum / n;
  report.test_accuracy = static_cast<double>(r.ensemble_correct) / n;
  write(options, to_json(records::eval{step, plan.rules.epoch_of(step), "test", *report.test_loss,
                                       *report.test_accuracy, r.count, eval_s,
                                       report.wall_s + eval_s, "final", report.metric}));
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
