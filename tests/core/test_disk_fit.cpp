// The disk a run's checkpoints take, estimated from the plan, against what encode_checkpoint
// really writes; and the refusal of a run whose output folder cannot hold them (issue 39, row 9).
#include "core/checkpoint/run_checkpoint.hpp"
#include "core/errors.hpp"
#include "core/optim/make_optimizer.hpp"
#include "core/run/disk_fit.hpp"
#include "temp_folder.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <torch/optim/optimizer.h>

#include <filesystem>
#include <fstream>

using namespace troupe;

namespace {

job_config small_job() {
  job_config job;
  job.data.kind = data_kind::synthetic;
  job.model.hidden = {64};
  job.training.steps = 100;
  job.training.batch_size = 32;
  job.checkpoint.every_steps = 10;
  return job;
}

// What encode_checkpoint writes for `plan`: every part's weights and a real optimizer's state
// after one step, and the named weights.
double encoded_bytes(const run_plan& plan) {
  run_checkpoint c;
  c.step = 9;
  c.job = {{"name", "x"}};
  const auto flat = plan.model.flat_size();
  for (int64_t part = 0; part < plan.checkpoint_parts(); ++part) {
    auto weights = at::zeros({flat});
    auto parameter = at::zeros({plan.model.parameters}).set_requires_grad(true);
    auto optimizer = make_optimizer(plan.job.optimizer, {parameter});
    parameter.mutable_grad() = at::ones({plan.model.parameters});
    optimizer->step();
    c.parts.push_back({part, weights, save_optimizer(*optimizer)});
  }
  if (plan.job.training.keep_best)
    c.best_weights = at::zeros({flat});
  double bytes = 0;
  for (const auto& f : encode_checkpoint(c, 1, plan.model.parameter_layout).files)
    bytes += static_cast<double>(f.bytes.size());
  return bytes;
}

}  // namespace

TEST_SUITE("checkpoint") {
  TEST_CASE("a checkpoint's estimated size is within 10% of what is written") {
    auto job = small_job();
    for (const auto kind : {optimizer_kind::sgd, optimizer_kind::adam}) {
      for (const int64_t replicas : {1, 2}) {
        job.optimizer.kind = kind;
        job.parallelism.replicas = replicas;
        job.parallelism.policy = replicas > 1 ? policy_kind::local_sgd : policy_kind::sync;
        const auto plan = make_run_plan(job, describe_data(job.data));
        const double estimated = checkpoint_bytes(plan);
        const double written = encoded_bytes(plan);
        CAPTURE(replicas);
        CHECK(estimated >= written * 0.9);
        CHECK(estimated <= written * 1.1 + (64 << 10));
      }
    }
  }

  TEST_CASE("checkpoints that the output folder's disk cannot hold are refused") {
    auto job = small_job();
    job.checkpoint.keep = 3;
    auto plan = make_run_plan(job, describe_data(job.data));
    CHECK(checkpoints_at_most(plan) == 4);  // 3 kept, one more while the next is written
    job.checkpoint.keep = 100;
    plan = make_run_plan(job, describe_data(job.data));
    // The run writes only 9 (after steps 9, 19, ..., 89: none after its last), one more while
    // the next is written (or Ctrl-C's).
    CHECK(checkpoints_at_most(plan) == 10);
    const double each = checkpoint_bytes(plan);
    CHECK_NOTHROW(check_checkpoints_fit(plan, "out", each * 10));
    CHECK_NOTHROW(check_checkpoints_fit(plan, "out", -1));  // unknown: no check
    CHECK_THROWS_WITH_AS(check_checkpoints_fit(plan, "out", each * 9),
                         doctest::Contains("/checkpoint: 10 checkpoints of about"), job_error);
    CHECK_THROWS_WITH_AS(check_checkpoints_fit(plan, "out", each * 9),
                         doctest::Contains("more than out has free"), job_error);
    job.checkpoint.every_steps = 0;  // none: nothing to hold
    plan = make_run_plan(job, describe_data(job.data));
    CHECK(checkpoints_at_most(plan) == 0);
    CHECK_NOTHROW(check_checkpoints_fit(plan, "out", 0));
    CHECK(disk_free_bytes("/no/such/folder/below/root") > 0);  // the root's file system
  }

  TEST_CASE("bytes_under counts the files of a folder, links not followed") {
    const temp_folder dir;
    std::filesystem::create_directories(dir.path / "step-9");
    std::ofstream(dir.path / "step-9" / "state.pt") << std::string(1000, 'x');
    std::ofstream(dir.path / "latest") << "step-9\n";
    std::filesystem::create_symlink("/dev/zero", dir.path / "endless");
    std::filesystem::create_directory_symlink(".", dir.path / "loop");
    CHECK(bytes_under(dir.path.string()) == 1007);
    CHECK(bytes_under((dir.path / "none").string()) == 0);
  }
}
