#include "apps/troupe/resume_point.hpp"

#include "core/checkpoint/checkpoint_store.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"
#include "core/io/terminal_output.hpp"
#include "core/train/run_tracker.hpp"
#include "core/train/validation_keeper.hpp"

#include <fmt/format.h>

#include <filesystem>

namespace troupe {

namespace {

// Whether the folder's summary.json says the run succeeded (a missing or unreadable one does
// not: a run killed before its end has none, or the stub of a failure).
bool already_succeeded(const std::string& run_dir) {
  try {
    const auto summary = read_json_file(run_dir + "/summary.json");
    return summary.is_object() && summary.value("status", "") == "succeeded";
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace

resume_point find_resume_point(const std::string& run_dir) {
  resume_point point;
  std::error_code error;
  if (!std::filesystem::is_directory(run_dir, error))
    throw job_error({"--resume " + run_dir + ": not a run folder (" +
                     (std::filesystem::exists(run_dir, error) ? "not a folder" : "no such folder") +
                     ")"});
  if (std::filesystem::exists(run_dir + "/suite.json", error))
    throw job_error({"--resume " + run_dir +
                     ": a suite's folder; resume one of its jobs (--resume " + run_dir +
                     "/JOB), or run the suite again into another folder"});
  // Before any checkpoint is read: a run still writing them would be read half-way.
  point.lock = std::make_shared<folder_lock>(run_dir, "--resume");
  // A run that ended well is resumed all the same (its last steps trained again, its outputs
  // written over, as the same weights), but not without a word.
  if (already_succeeded(run_dir))
    print_to_terminal(
        stderr,
        "note: {}: the run already succeeded (its summary.json says so); its steps after "
        "the newest checkpoint train again and its outputs are written anew\n",
        run_dir);
  // The run folder's own job names which checkpoints are its: one copied in from another run
  // would otherwise continue as this one, its job.json overwritten.
  const auto job_file = run_dir + "/job.json";
  std::string run_job;
  try {
    run_job = job_digest(read_json_file(job_file));
  } catch (const job_error& e) {
    throw job_error({"--resume " + run_dir + ": not the folder of a run: " + e.problems().front()});
  }
  const auto stored = read_latest_checkpoint(
      run_dir,
      [&point](const std::string& line) {
        print_to_terminal(stderr, "note: {}\n", line);
        ++point.skipped;
      },
      run_job);
  if (!stored && !std::filesystem::exists(checkpoints_folder(run_dir), error))
    throw job_error({"--resume " + run_dir +
                     ": the run wrote no checkpoint (it stopped before its first, or its job "
                     "has checkpoint.every_steps 0): run the job again"});
  if (!stored)
    throw job_error({"--resume " + run_dir + ": no checkpoint in " + checkpoints_folder(run_dir) +
                     " verifies"});
  point.folder = checkpoints_folder(run_dir) + "/step-" + std::to_string(stored->step);
  try {
    point.checkpoint = std::make_shared<run_checkpoint>(decode_checkpoint(*stored));
  } catch (const std::exception& e) {
    throw job_error({"--resume " + point.folder + ": " + e.what()});
  }
  // A checkpoint from before manifests named their job: its state.json's job.
  if (const auto its_job = job_digest(point.checkpoint->job); its_job != run_job)
    throw job_error({fmt::format(
        "--resume {}: the checkpoint belongs to another job than {} (job SHA-256 {}, the "
        "folder's {})",
        point.folder, job_file, its_job.substr(0, 12), run_job.substr(0, 12))});
  return point;
}

namespace {

// A state.json whose manifest was rewritten to match it is read as troupe wrote it: what
// restoring its progress would choke on is refused here (exit 2), not as a failed run that
// invites another --resume, which fails the same way. A count that is no whole number
// (core/train/saved_count) is refused by name; a loss of any size is a figure troupe wrote.
void check_progress(const run_checkpoint& c, const run_plan& plan, const std::string& where) {
  try {
    run_tracker trial(plan.workers, plan.rules, nullptr);
    trial.restore(c.progress.at("tracker"));
    if (plan.snapshots()) {
      validation_keeper keeper(plan.job.training.keep_best, plan.job.training.early_stopping,
                               plan.stage_parameters());
      keeper.restore(c.progress.at("keeper"), c.best_weights);
    }
  } catch (const std::exception& e) {
    throw job_error({where + "state.json's progress is not what troupe writes (" + e.what() + ")"});
  }
}

}  // namespace

void check_resume_matches(const resume_point& point, const run_plan& plan) {
  const auto& c = *point.checkpoint;
  const auto where = "--resume " + point.folder + ": ";
  if (c.step < 0 || c.step + 1 >= plan.rules.total_steps())
    throw job_error({where + "the checkpoint is after " + std::to_string(c.step + 1) +
                     " steps, the run has " + std::to_string(plan.rules.total_steps())});
  const auto parts = static_cast<int64_t>(c.parts.size());
  if (parts != plan.checkpoint_parts())
    throw job_error({where + "the checkpoint holds " + std::to_string(parts) +
                     " part(s) of state, the job's run " +
                     std::to_string(plan.checkpoint_parts())});
  check_progress(c, plan, where);
  if (plan.mode == run_mode::ensemble)
    return;  // the ensemble engine checks the size of its one part when it restores
  for (const auto& p : c.parts) {
    const auto expected = plan.mode == run_mode::pipeline
                              ? plan.stages[static_cast<std::size_t>(p.part)].flat_size()
                              : plan.model.flat_size();
    if (p.weights.numel() != expected)
      throw job_error({where + "the checkpoint's part " + std::to_string(p.part) + " holds " +
                       std::to_string(p.weights.numel()) + " weights, the job's " +
                       (plan.mode == run_mode::pipeline ? "stage " : "model ") +
                       std::to_string(expected)});
  }
  if (c.best_weights.defined() && c.best_weights.numel() != plan.model.flat_size())
    throw job_error({where + "the checkpoint's best weights hold " +
                     std::to_string(c.best_weights.numel()) + " values, the job's model " +
                     std::to_string(plan.model.flat_size())});
}

}  // namespace troupe
