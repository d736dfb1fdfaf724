#include "apps/troupe/resume_point.hpp"

#include "core/checkpoint/checkpoint_store.hpp"
#include "core/config/parse_job.hpp"
#include "core/errors.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

namespace troupe {

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
  // The run folder's own job names which checkpoints are its: one copied in from another run
  // would otherwise continue as this one, its job.json overwritten.
  const auto job_file = run_dir + "/job.json";
  std::string run_job;
  std::optional<job_error> no_job;
  try {
    run_job = job_digest(read_json_file(job_file));
  } catch (const job_error& e) {
    no_job = e;
  }
  const auto stored = read_latest_checkpoint(
      run_dir,
      [&point](const std::string& line) {
        fmt::print(stderr, "note: {}\n", line);
        ++point.skipped;
      },
      run_job);
  if (!stored)
    throw job_error({"--resume " + run_dir + ": no checkpoint in " + checkpoints_folder(run_dir) +
                     " verifies"});
  if (no_job)
    throw job_error(
        {"--resume " + run_dir + ": not the folder of a run: " + no_job->problems().front()});
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
