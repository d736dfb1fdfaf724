// A stacked ensemble runs under the run driver, as every run does (one control loop for steps,
// stop requests, early stopping, checkpoints and the final evaluation): its weights are exactly
// the ensemble engine's stepped alone, every member is reported with its figures and its own
// weights, its metrics carry a member_eval record per member and evaluation, a diverging member
// ends the run as diverged naming the member, and a stop request ends it after the step in
// progress.
#include "core/ensemble/ensemble_engine.hpp"
#include "training_fixtures.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>

using namespace troupe;

namespace {

job_config small_ensemble(int64_t members, int64_t steps) {
  auto job = test::small_job(1, steps);
  job.ensemble.members = members;
  job.training.eval_interval = 20;
  // One intra-op thread in the worker and in the engine alone: OpenBLAS keeps one thread count
  // per process and once 1 it stays 1 (core/run/thread_team.hpp), so after earlier tests in this
  // binary a 2-thread worker and a 2-thread engine alone could multiply on different counts
  // (2e-7 apart on an AMD EPYC); on one thread each they are bitwise alike wherever they run.
  job.parallelism.threads_per_replica = 1;
  return job;
}

}  // namespace

TEST_SUITE("training") {
  TEST_CASE("an ensemble under the driver ends with the engine's weights, every member reported") {
    const auto job = small_ensemble(3, 40);
    const auto data = test::small_data(job);
    const auto metrics_path = std::filesystem::temp_directory_path() /
                              ("troupe-ensemble-" + std::to_string(::getpid()) + ".jsonl");
    run_report r;
    {
      jsonl_writer metrics(metrics_path.string());
      run_options options;
      options.metrics = &metrics;
      r = plan_and_run(job, data, options);
    }
    REQUIRE_MESSAGE(r.succeeded(), r.error);
    CHECK(r.steps == 40);
    CHECK(!r.final_weights.defined());  // one file per member instead of weights.pt

    // The same steps on the engine alone, with the plan's rates.
    const auto plan = make_run_plan(job, facts_of(*data));
    const auto threads = at::get_num_threads();
    at::set_num_threads(1);
    ensemble_engine alone(ensemble_plan_of(job), data);
    for (int64_t s = 0; s < 40; ++s)
      alone.step(s, plan.lr_at(s));
    at::set_num_threads(threads);
    REQUIRE(r.member_weights.size() == 3);
    for (int64_t k = 0; k < 3; ++k) {
      const auto expected = alone.member_weights(k);
      const auto& got = r.member_weights[static_cast<std::size_t>(k)];
      REQUIRE(got.size() == expected.size());
      for (std::size_t i = 0; i < got.size(); ++i) {
        CHECK(got[i].first == expected[i].first);
        CHECK(at::equal(got[i].second, expected[i].second));
      }
    }

    REQUIRE(r.members.size() == 3);
    const auto evaluation = alone.evaluate(data->test);
    for (const auto& m : r.members) {
      CHECK(m.seed == job.seed + static_cast<uint64_t>(m.member));
      REQUIRE(m.test_loss.has_value());
      CHECK(*m.test_loss ==
            doctest::Approx(evaluation.loss_sum[static_cast<std::size_t>(m.member)] /
                            static_cast<double>(evaluation.count)));
    }
    REQUIRE(r.test_accuracy.has_value());
    CHECK(*r.test_accuracy == doctest::Approx(static_cast<double>(evaluation.ensemble_correct) /
                                              static_cast<double>(evaluation.count)));

    int64_t member_evals = 0;
    std::ifstream in(metrics_path);
    for (std::string line; std::getline(in, line);)
      if (nlohmann::json::parse(line).value("event", "") == "member_eval")
        ++member_evals;
    std::filesystem::remove(metrics_path);
    CHECK(member_evals == 2 * 3);  // after steps 19 and 39, each member
  }

  TEST_CASE("a diverging ensemble member ends the run as diverged, naming the member") {
    auto job = small_ensemble(2, 40);
    job.optimizer.lr = 1e12;
    job.optimizer.momentum = 0;
    const auto r = plan_and_run(job, test::small_data(job), {});
    CHECK(r.status == run_status::diverged);
    CHECK_MESSAGE(r.error.find("for ensemble member") != std::string::npos, r.error);
    CHECK(r.member_weights.empty());
    CHECK(r.members.size() == 2);
  }

  TEST_CASE("a stop request ends an ensemble after the step in progress") {
    auto job = small_ensemble(2, 100000);
    std::atomic<bool> stop{false};
    run_options options;
    options.stop_requested = &stop;
    options.on_progress = [&stop](const progress_update& p) {
      if (p.step >= 30)
        stop = true;
    };
    const auto r = plan_and_run(job, test::small_data(job), options);
    CHECK(r.status == run_status::failed);
    CHECK_MESSAGE(r.error.find("interrupted after") == 0, r.error);
    CHECK(r.steps >= 30);
    CHECK(r.steps < 100000);
  }
}
