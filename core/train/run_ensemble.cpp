#include "core/train/run_ensemble.hpp"

#include "core/ensemble/ensemble_engine.hpp"
#include "core/run/run_ending.hpp"
#include "core/train/run_tracker.hpp"

#include <ATen/Parallel.h>

#include <chrono>

namespace troupe {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

// Evaluates every member (into `members` and member_eval records) and the ensemble (the run's
// test figures).
void evaluate(ensemble_engine& engine, run_tracker& tracker, int64_t step,
              std::vector<member_report>& members, const run_options& options) {
  const auto start = clock_type::now();
  const auto r = engine.evaluate();
  const double n = static_cast<double>(std::max<int64_t>(r.count, 1));
  for (std::size_t m = 0; m < members.size(); ++m) {
    members[m].test_loss = r.loss_sum[m] / n;
    members[m].test_accuracy = static_cast<double>(r.correct[m]) / n;
    tracker.record(records::member_eval{step, static_cast<int64_t>(m), *members[m].test_loss,
                                        *members[m].test_accuracy, 0});
  }
  auto progress = tracker.on_eval_shard(0, step, r.ensemble_loss_sum, r.ensemble_correct, r.count,
                                        seconds_since(start), 1);
  if (progress && options.on_progress)
    options.on_progress(*progress);
}

// The training loop; returns why it stopped early ("" when every step ran).
std::string train(ensemble_engine& engine, run_tracker& tracker, const run_plan& plan,
                  std::vector<member_report>& members, const run_options& options) {
  const auto& rules = plan.rules;
  tracker.start();
  for (int64_t step = 0; step < rules.total_steps(); ++step) {
    const auto start = clock_type::now();
    const double loss = engine.step(step);
    tracker.on_worker_step(0, step, seconds_since(start), 0, 0);
    auto progress = tracker.on_step_complete(step, {{0, loss, plan.job.training.batch_size}}, 0);
    if (options.on_progress)
      options.on_progress(progress);
    if (rules.evaluates_after(step))
      evaluate(engine, tracker, step, members, options);
    if (auto stop = stop_reason(options, rules, step); !stop.empty())
      return stop;
  }
  return "";
}

}  // namespace

run_report run_ensemble(const run_plan& plan, dataset_ptr data, const run_options& options) {
  const auto& job = plan.job;
  at::set_num_threads(static_cast<int>(job.parallelism.threads_per_replica));
  run_tracker tracker(1, plan.rules, options.metrics);
  std::vector<member_report> members;
  for (int64_t k = 0; k < job.ensemble.members; ++k)
    members.push_back({k, job.seed + static_cast<uint64_t>(k), member_job(job, k).optimizer.lr,
                       std::nullopt, std::nullopt});
  std::string error;
  std::unique_ptr<ensemble_engine> engine;
  try {
    engine = std::make_unique<ensemble_engine>(job, data);
    error = train(*engine, tracker, plan, members, options);
  } catch (const std::exception& e) {
    error = e.what();
  }
  auto report = end_run(tracker, plan, error, at::Tensor());
  report.members = std::move(members);
  if (error.empty())
    for (int64_t k = 0; k < job.ensemble.members; ++k)
      report.member_weights.push_back(engine->member_weights(k));
  return report;
}

}  // namespace troupe
