#include "core/run/run_ensemble.hpp"

#include "core/checkpoint/checkpoint_schedule.hpp"
#include "core/checkpoint/checkpoint_writer.hpp"
#include "core/config/parse_job.hpp"
#include "core/ensemble/ensemble_engine.hpp"
#include "core/errors.hpp"
#include "core/run/run_ending.hpp"
#include "core/train/run_tracker.hpp"
#include "core/train/validation_keeper.hpp"

#include <ATen/Parallel.h>
#include <stdexcept>

#include <chrono>

namespace troupe {
namespace {

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t) {
  return std::chrono::duration<double>(clock_type::now() - t).count();
}

struct ensemble_run {
  const run_plan& plan;
  const run_options& options;
  ensemble_engine& engine;
  run_tracker& tracker;
  std::vector<member_report>& members;
  std::optional<metric_watch> stopping;  ///< early stopping, on the ensemble's validation figure
  /// With a checkpoint directory: when checkpoints are due, and who writes them.
  std::optional<checkpoint_schedule> schedule;
  std::unique_ptr<checkpoint_writer> writer;
};

void record_written(ensemble_run& run, const std::vector<checkpoint_written>& written) {
  for (const auto& w : written)
    run.tracker.record(records::checkpoint{w.step, w.bytes, w.seconds, w.error, 0});
}

// Records what the writer finished; a checkpoint that failed ends the run (write_failure).
void record_or_end(ensemble_run& run, const std::vector<checkpoint_written>& written) {
  record_written(run, written);
  if (auto failure = write_failure(written); !failure.empty())
    throw std::runtime_error(failure);
}

// The state after `step` (the one part: every member's weights and the optimizer), handed to
// the writer's thread.
void take_checkpoint(ensemble_run& run, int64_t step) {
  run_checkpoint c;
  c.step = step;
  c.job = nlohmann::json(to_json(run.plan.job));
  c.progress = {{"tracker", run.tracker.save()},
                {"stopping", run.stopping ? run.stopping->save() : nlohmann::json()}};
  c.parts.push_back({0, run.engine.weights(), run.engine.optimizer_state()});
  run.writer->submit(std::move(c));
  record_or_end(run, run.writer->finished());
}

// The first step to run: after the checkpoint of a resumed run, else 0.
int64_t restore(ensemble_run& run) {
  const auto& from = run.options.resume_from;
  if (!from)
    return 0;
  const auto& part = from->parts.at(0);
  run.engine.restore(part.weights, part.optimizer);
  run.tracker.restore(from->progress.at("tracker"));
  if (run.stopping && !from->progress.at("stopping").is_null())
    run.stopping->restore(from->progress.at("stopping"));
  return from->step + 1;
}

// A stop request: the checkpoint of `step` is written before the run ends.
std::string stop_after(ensemble_run& run, int64_t step, std::string reason) {
  if (!run.writer)
    return reason;
  take_checkpoint(run, step);
  for (const auto& w : run.writer->flush()) {
    record_written(run, {w});
    if (w.step == step && !w.error.empty())
      reason += "; its checkpoint could not be written: " + w.error;
  }
  return reason;
}

// Each member's figures on `set` (into `members` and member_eval records); returns the
// ensemble's (the averaged prediction).
ensemble_evaluation evaluate_members(ensemble_run& run, int64_t step, const char* split,
                                     const labeled_images& set) {
  const auto r = run.engine.evaluate(set);
  const double n = static_cast<double>(std::max<int64_t>(r.count, 1));
  const bool test = std::string(split) == "test";
  for (std::size_t m = 0; m < run.members.size(); ++m) {
    auto& member = run.members[m];
    const double loss = r.loss_sum[m] / n;
    const double accuracy = static_cast<double>(r.correct[m]) / n;
    (test ? member.test_loss : member.validation_loss) = loss;
    (test ? member.test_accuracy : member.validation_accuracy) = accuracy;
    run.tracker.record(
        records::member_eval{step, static_cast<int64_t>(m), split, loss, accuracy, 0});
  }
  return r;
}

// The evaluation after `step` (validation set, else test set). Returns whether early stopping
// says to stop.
bool evaluate(ensemble_run& run, int64_t step) {
  const auto start = clock_type::now();
  const bool validation = run.plan.data.validation_rows > 0;
  const auto r = evaluate_members(run, step, validation ? "validation" : "test",
                                  evaluation_set(*run.engine.data()));
  auto progress = run.tracker.on_eval_shard(0, step, r.ensemble_loss_sum, r.ensemble_correct,
                                            r.count, seconds_since(start), 1);
  if (progress && run.options.on_progress)
    run.options.on_progress(*progress);
  if (!run.stopping)
    return false;
  const double n = static_cast<double>(std::max<int64_t>(r.count, 1));
  run.stopping->improves(r.ensemble_loss_sum / n, static_cast<double>(r.ensemble_correct) / n);
  return run.stopping->since_best() >= run.plan.job.training.early_stopping->patience;
}

// The test set's one evaluation, at the end, of a run with a validation set.
void evaluate_test(ensemble_run& run, int64_t step) {
  const auto start = clock_type::now();
  const auto r = evaluate_members(run, step, "test", run.engine.data()->test);
  run.tracker.on_test_evaluation(step, "final", r.ensemble_loss_sum, r.ensemble_correct, r.count,
                                 seconds_since(start));
}

// The training loop; returns why it stopped early ("" when every step ran, or early stopping
// ended it, which `stopped_at` then says).
std::string train(ensemble_run& run, std::optional<int64_t>& stopped_at) {
  const auto& rules = run.plan.rules;
  run.tracker.start();
  const auto first = restore(run);
  if (!run.options.checkpoint_dir.empty()) {
    run.schedule.emplace(run.plan.job.checkpoint, rules.total_steps(), run.tracker.elapsed_s());
    run.writer = std::make_unique<checkpoint_writer>(
        run.options.checkpoint_dir, run.plan.job.checkpoint.keep, 1, parameter_layout{});
  }
  for (int64_t step = first; step < rules.total_steps(); ++step) {
    const auto start = clock_type::now();
    const double loss = run.engine.step(step, run.plan.lr_at(step));
    run.tracker.on_worker_step(0, step, seconds_since(start), 0, 0);
    auto progress =
        run.tracker.on_step_complete(step, {{0, loss, run.plan.job.training.batch_size}}, 0);
    if (run.options.on_progress)
      run.options.on_progress(progress);
    if (rules.evaluates_after(step) && evaluate(run, step) && !rules.is_last(step)) {
      stopped_at = step;
      break;
    }
    if (auto stop = stop_reason(run.options, rules, step); !stop.empty())
      return stop_after(run, step, stop);
    if (run.schedule && run.schedule->due(step, run.tracker.elapsed_s()))
      take_checkpoint(run, step);
  }
  if (run.writer)
    record_or_end(run, run.writer->flush());
  if (run.plan.data.validation_rows > 0)
    evaluate_test(run, stopped_at.value_or(rules.total_steps() - 1));
  return "";
}

}  // namespace

run_report run_ensemble(const run_plan& plan, dataset_ptr data, const run_options& options) {
  const auto& job = plan.job;
  at::set_num_threads(static_cast<int>(job.parallelism.threads_per_replica));
  run_tracker tracker(1, plan.rules, options.metrics, tracking_of(plan));
  std::vector<member_report> members;
  for (int64_t k = 0; k < job.ensemble.members; ++k) {
    member_report m;
    m.member = k;
    m.seed = job.seed + static_cast<uint64_t>(k);
    m.lr = member_job(job, k).optimizer.lr;
    members.push_back(m);
  }
  std::string error;
  auto failed_as = run_status::failed;
  std::optional<int64_t> stopped_at;
  std::unique_ptr<ensemble_engine> engine;
  try {
    engine = std::make_unique<ensemble_engine>(job, data);
    ensemble_run run{plan, options, *engine, tracker, members, std::nullopt, std::nullopt, nullptr};
    if (job.training.early_stopping)
      run.stopping.emplace(job.training.early_stopping->metric,
                           job.training.early_stopping->min_delta);
    error = train(run, stopped_at);
  } catch (const diverged_error& e) {
    error = std::string("diverged: ") + e.what();
    failed_as = run_status::diverged;
  } catch (const std::exception& e) {
    error = message_of(e);
  }
  auto report = end_run(tracker, plan, error, at::Tensor(), failed_as);
  report.members = std::move(members);
  report.stopped_early_at = stopped_at;
  if (error.empty())
    for (int64_t k = 0; k < job.ensemble.members; ++k)
      report.member_weights.push_back(engine->member_weights(k));
  return report;
}

}  // namespace troupe
