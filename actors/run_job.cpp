#include "actors/run_job.hpp"

#include "actors/cluster/run_cluster.hpp"
#include "actors/cluster/system_config.hpp"
#include "actors/driver/run_driver.hpp"
#include "core/data/data_source.hpp"
#include "core/errors.hpp"
#include "core/run/deterministic_kernels.hpp"
#include "core/run/ensemble_ending.hpp"
#include "core/run/run_ending.hpp"
#include "core/run/thread_team.hpp"
#include "core/train/replica_engine.hpp"
#include "gpu/memory_cap.hpp"

#include <caf/all.hpp>

#include <chrono>

namespace troupe {
namespace {

// A run with a validation set evaluates the test set once, at the end, on the weights it kept
// (the best ones with keep_best, else the final ones), here on the calling thread.
void evaluate_test_set(const run_plan& plan, const dataset_ptr& data, const run_options& options,
                       run_report& report) {
  if (!report.succeeded() || plan.data.validation_rows == 0)
    return;
  const bool best = report.best_weights.defined();
  const auto step =
      best ? *report.best_step : report.stopped_early_at.value_or(plan.rules.total_steps() - 1);
  const auto start = std::chrono::steady_clock::now();
  const auto r = evaluate_weights(settings_of(plan.job), data,
                                  best ? report.best_weights : report.final_weights, data->test);
  const double eval_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  record_test_evaluation(plan, options, report, step, best ? "best" : "final", r.loss_sum,
                         r.metric_sum, r.count, eval_s, r.confusion);
}

run_report run_in_process(const run_plan& plan, dataset_ptr data, const run_options& options) {
  // The plan's threads here too: the final evaluation runs on this thread, and its products
  // must not reset OpenBLAS's count under the workers (core/run/thread_team.hpp).
  use_plan_threads(plan);
  driver_options d;
  d.context = make_worker_context(plan, std::move(data));
  d.run = options;
  caf::actor_system_config cfg;
  caf::actor_system system{configure_system(cfg)};
  auto report = await_report(system, spawn_run_driver(system, std::move(d)));
  system.await_all_actors_done();
  return report;
}

}  // namespace

run_report run_job(const run_plan& plan, dataset_ptr data, const run_options& options) {
  check_data_matches(plan.data, *data, plan.job.data);
  if (plan.job.cluster.enabled() && !options.cluster)
    throw job_error({"/cluster/nodes: a job for " + std::to_string(plan.job.cluster.nodes) +
                     " node(s) needs an address to wait for them on"});
  const deterministic_kernels kernels(plan.job.deterministic);
  const gpu::memory_cap cap(plan.job.gpu_memory_mb, plan.devices.workers);
  auto report = plan.job.cluster.enabled() ? run_cluster(plan, data, options)
                                           : run_in_process(plan, data, options);
  if (plan.mode == run_mode::ensemble)
    finish_ensemble_report(plan, data, options, report);
  else
    evaluate_test_set(plan, data, options, report);
  return report;
}

run_report plan_and_run(const job_config& job, dataset_ptr data, const run_options& options) {
  // The data's facts make the plan: a split the job asks for must be in the data already.
  if (job.data.validation > 0 && data->validation.size() == 0)
    throw data_error(
        "the data holds no validation set, but the job asks for one: load it "
        "with load_dataset, which holds it out");
  const auto plan = make_run_plan(job, facts_of(*data));
  return run_job(plan, std::move(data), options);
}

}  // namespace troupe
