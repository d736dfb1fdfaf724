// Checkpoints through the real driver and workers, in one process: a run that checkpoints
// writes what the plan says, a stop request ends it at a step whose checkpoint is on disk, and
// the run resumed from any checkpoint ends with the uninterrupted run's weights bit for bit
// (sync, local_sgd, a pipeline; async resumes and completes). The CLI's kill -9 tests are in
// tests/e2e/checkpoint_test.sh; these run under the sanitizers too.
#include "core/checkpoint/checkpoint_store.hpp"
#include "core/checkpoint/run_checkpoint.hpp"
#include "core/policy/step_pace.hpp"
#include "core/run/run_plan.hpp"
#include "training_fixtures.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>

using namespace troupe;
namespace fs = std::filesystem;

namespace {

struct run_folder {
  fs::path path;
  explicit run_folder(const std::string& name) {
    path = fs::temp_directory_path() / ("troupe-ckpt-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~run_folder() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

job_config job_of(policy_kind policy, int64_t stages = 1) {
  auto job = test::small_job(2, 40);
  job.parallelism.policy = policy;
  job.parallelism.period = 3;
  job.parallelism.stages = stages;
  job.checkpoint.every_steps = 7;
  job.checkpoint.keep = 10;
  return job;
}

run_report run_with(const job_config& job, const std::string& dir,
                    std::shared_ptr<const run_checkpoint> from = nullptr,
                    const std::atomic<bool>* stop = nullptr) {
  run_options options;
  options.checkpoint_dir = dir;
  options.resume_from = std::move(from);
  options.stop_requested = stop;
  return plan_and_run(job, test::small_data(job), options);
}

std::vector<int64_t> checkpoint_steps(const fs::path& dir) {
  std::vector<int64_t> steps;
  for (const auto& e : fs::directory_iterator(checkpoints_folder(dir.string())))
    if (e.path().filename().string().rfind("step-", 0) == 0)
      steps.push_back(std::stoll(e.path().filename().string().substr(5)));
  std::sort(steps.begin(), steps.end());
  return steps;
}

// The checkpoint of `step` from the run in `full`, alone in `into` (so the newest there), read
// back from there.
std::shared_ptr<run_checkpoint> checkpoint_alone(const fs::path& full, int64_t step,
                                                 const run_folder& into) {
  fs::create_directories(checkpoints_folder(into.path.string()));
  const auto name = "step-" + std::to_string(step);
  fs::copy(fs::path(checkpoints_folder(full.string())) / name,
           fs::path(checkpoints_folder(into.path.string())) / name);
  const auto stored = read_latest_checkpoint(into.path.string(), nullptr);
  REQUIRE(stored);
  return std::make_shared<run_checkpoint>(decode_checkpoint(*stored));
}

// `job` with no scheduled checkpoints, its folder `dir`, stopped as Ctrl-C does once step 5 is
// complete: the run writes the checkpoint of the step it stops after.
run_report run_stopped(job_config job, const run_folder& dir) {
  job.checkpoint.every_steps = 0;
  job.training.steps = 1000;
  std::atomic<bool> stop{false};
  run_options options;
  options.checkpoint_dir = dir.path.string();
  options.stop_requested = &stop;
  options.on_progress = [&](const progress_update& p) {
    if (p.step >= 5)
      stop = true;
  };
  return plan_and_run(job, test::small_data(job), options);
}

}  // namespace

TEST_SUITE("checkpoints") {
  TEST_CASE("every checkpoint of a run resumes to the uninterrupted run's weights, bit for bit") {
    // local_sgd also with 3 streaming fragments (one averaged after every step) and DiLoCo's
    // outer step, whose base and momentum the checkpoints carry.
    struct variant {
      policy_kind policy;
      int64_t stages;
      int64_t fragments;
    };
    for (auto [policy, stages, fragments] :
         {variant{policy_kind::sync, 1, 1}, variant{policy_kind::local_sgd, 1, 1},
          variant{policy_kind::sync, 2, 1}, variant{policy_kind::local_sgd, 1, 3}}) {
      CAPTURE(to_string(policy));
      CAPTURE(stages);
      CAPTURE(fragments);
      auto job = job_of(policy, stages);
      job.parallelism.fragments = fragments;
      if (fragments > 1)
        job.parallelism.outer_optimizer = {true, 0.7, 0.5, true};
      run_folder full("full");
      const auto reference = run_with(job, full.path.string());
      REQUIRE_MESSAGE(reference.succeeded(), reference.error);
      CHECK(checkpoint_steps(full.path) == std::vector<int64_t>{6, 13, 20, 27, 34});
      for (auto step : {6, 20, 34}) {
        CAPTURE(step);
        run_folder resumed("resumed");
        const auto from = checkpoint_alone(full.path, step, resumed);
        CHECK(from->step == step);
        CHECK(static_cast<int64_t>(from->parts.size()) ==
              (policy == policy_kind::local_sgd ? 2 : stages));
        const auto r = run_with(job, resumed.path.string(), from);
        REQUIRE_MESSAGE(r.succeeded(), r.error);
        CHECK(r.steps == 40);
        CHECK(at::equal(r.final_weights, reference.final_weights));
      }
    }
  }

  TEST_CASE(
      "with a fragment's average in flight, a checkpoint waits for the merge; resumes exact") {
    auto job = job_of(policy_kind::local_sgd);
    job.parallelism.period = 4;
    job.parallelism.fragments = 2;  // one after every odd step, merged before the next step
    job.parallelism.fragment_overlap = 1;
    job.parallelism.outer_optimizer = {true, 0.7, 0.5, true};
    run_folder full("overlap");
    const auto reference = run_with(job, full.path.string());
    REQUIRE_MESSAGE(reference.succeeded(), reference.error);
    // Due after 6, 13, 20, 27 and 34; 13 and 27 hand a fragment in, so those come a step later.
    CHECK(checkpoint_steps(full.path) == std::vector<int64_t>{6, 14, 20, 28, 34});
    for (auto step : {14, 28}) {
      CAPTURE(step);
      run_folder resumed("overlap-resumed");
      const auto r =
          run_with(job, resumed.path.string(), checkpoint_alone(full.path, step, resumed));
      REQUIRE_MESSAGE(r.succeeded(), r.error);
      CHECK(at::equal(r.final_weights, reference.final_weights));
    }
    // A stop lands after a step with nothing in flight, with its checkpoint.
    run_folder stopped("overlap-stopped");
    const auto r = run_stopped(job, stopped);
    CHECK(r.status == run_status::failed);
    const auto steps = checkpoint_steps(stopped.path);
    REQUIRE(steps.size() == 1);
    CHECK(!make_run_plan(job, describe_data(job.data)).schedule.fragment_in_flight(steps[0]));
  }

  TEST_CASE("a stop request ends the run once the checkpoint of its last step is written") {
    for (auto [policy, stages] :
         {std::pair{policy_kind::sync, int64_t{1}}, std::pair{policy_kind::local_sgd, int64_t{1}},
          std::pair{policy_kind::sync, int64_t{2}}, std::pair{policy_kind::async, int64_t{1}}}) {
      CAPTURE(to_string(policy));
      CAPTURE(stages);
      run_folder dir("stop");
      const auto r = run_stopped(job_of(policy, stages), dir);
      REQUIRE(r.status == run_status::failed);
      const auto stored = read_latest_checkpoint(dir.path.string(), nullptr);
      REQUIRE(stored);
      CHECK(r.error == "interrupted after " + std::to_string(stored->step + 1) + " steps");
      CHECK(stored->step >= 4);
      // Within the release window of the request (this job's steps are short: blocks).
      CHECK(stored->step <= 5 + block_release_window);
      // The summary counts the steps that ran, which include those after the checkpoint's.
      CHECK(r.steps >= stored->step + 1);
    }
  }

  TEST_CASE("resuming async continues the server's state to the end") {
    const auto job = job_of(policy_kind::async);
    run_folder full("async");
    const auto reference = run_with(job, full.path.string());
    REQUIRE_MESSAGE(reference.succeeded(), reference.error);
    const auto stored = read_latest_checkpoint(full.path.string(), nullptr);
    REQUIRE(stored);
    auto from = std::make_shared<run_checkpoint>(decode_checkpoint(*stored));
    REQUIRE(from->parts.size() == 1);
    run_folder resumed("async-resumed");
    const auto r = run_with(job, resumed.path.string(), from);
    REQUIRE_MESSAGE(r.succeeded(), r.error);
    CHECK(r.steps == 40);
  }
}
