// Training through the actors: replicas equal one worker on the same global batch, runs are
// deterministic, and a failing worker ends the run with its name and cause instead of a hang;
// async's bound, schedules and clipping. Local SGD, DiLoCo and streaming fragments have
// test_local_sgd.cpp.
#include "training_fixtures.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>

using namespace troupe;

namespace {

// Runs `job` with its metrics in a temporary file and returns the records.
std::vector<nlohmann::json> run_with_metrics(const job_config& job, run_report* report = nullptr) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("troupe-metrics-" + std::to_string(::getpid()) + ".jsonl");
  std::filesystem::remove(path);
  run_report r;
  {
    jsonl_writer metrics(path.string());
    run_options options;
    options.metrics = &metrics;
    r = plan_and_run(job, test::small_data(job), options);
  }
  REQUIRE_MESSAGE(r.succeeded(), r.error);
  std::vector<nlohmann::json> records;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);)
    records.push_back(nlohmann::json::parse(line));
  std::filesystem::remove(path);
  if (report != nullptr)
    *report = std::move(r);
  return records;
}

}  // namespace

TEST_SUITE("training") {
  TEST_CASE("two replicas equal one replica on the same global batch (50 steps)") {
    for (auto optimizer : {optimizer_kind::sgd, optimizer_kind::adam, optimizer_kind::adamw,
                           optimizer_kind::rmsprop}) {
      CAPTURE(to_string(optimizer));
      auto one = test::small_job(1, 50);
      one.optimizer.kind = optimizer;
      if (optimizer == optimizer_kind::adam || optimizer == optimizer_kind::adamw) {
        one.optimizer.lr = 0.001;
        one.optimizer.momentum = 0;
        one.optimizer.weight_decay = optimizer == optimizer_kind::adamw ? 0.05 : 0;
      }
      if (optimizer == optimizer_kind::rmsprop) {  // momentum 0.9 stays
        one.optimizer.lr = 0.001;
        one.optimizer.centered = true;
      }
      auto two = one;
      two.parallelism.replicas = 2;
      auto data = test::small_data(one);
      auto a = plan_and_run(one, data, {});
      auto b = plan_and_run(two, data, {});
      REQUIRE(a.succeeded());
      REQUIRE(b.succeeded());
      CHECK(a.steps == 50);
      CHECK(b.workers.size() == 2);
      CHECK(b.workers[0].samples == 50 * 16);
      // Two halves' gradients sum to the whole batch's within float rounding; RMSprop divides
      // by the root of the squares' average, which turns that rounding into up to ~lr x 1e-2.
      CHECK(test::max_abs_diff(a.final_weights, b.final_weights) <=
            (optimizer == optimizer_kind::rmsprop ? 5e-5 : 1e-5));
      CHECK(*a.test_accuracy == doctest::Approx(*b.test_accuracy).epsilon(0.02));
    }
  }

  TEST_CASE("three replicas with an uneven split still equal one replica") {
    auto one = test::small_job(1, 30);
    auto three = one;
    three.parallelism.replicas = 3;  // 32 rows: 11, 11, 10
    auto data = test::small_data(one);
    auto a = plan_and_run(one, data, {});
    auto c = plan_and_run(three, data, {});
    REQUIRE(c.succeeded());
    CHECK(test::max_abs_diff(a.final_weights, c.final_weights) <= 1e-5);
  }

  TEST_CASE("the same job twice gives equal weights") {
    auto job = test::small_job(2, 40);
    auto data = test::small_data(job);
    auto a = plan_and_run(job, data, {});
    auto b = plan_and_run(job, data, {});
    REQUIRE(a.succeeded());
    CHECK(at::equal(a.final_weights, b.final_weights));
    job.seed = 4;
    auto c = plan_and_run(job, test::small_data(job), {});
    CHECK(!at::equal(a.final_weights, c.final_weights));
  }

  TEST_CASE("training learns the synthetic task and reports every figure") {
    auto job = test::small_job(2, 60);
    int updates = 0;
    run_options options;
    options.on_progress = [&](const progress_update&) { ++updates; };
    auto r = plan_and_run(job, test::small_data(job), options);
    REQUIRE(r.succeeded());
    CHECK(*r.test_accuracy > 0.9);
    CHECK(r.samples == 60 * 32);
    CHECK(r.samples_per_s() > 0);
    CHECK(updates >= 60);
    for (const auto& w : r.workers) {
      CHECK(w.steps == 60);
      CHECK(w.compute_s > 0);
      // Timed around the evaluation (it read about 2e-8 s: the clock before the evaluation).
      CHECK(w.eval_s > 1e-6);
    }
  }

  TEST_CASE("a worker that throws inside LibTorch ends the run, naming the worker and cause") {
    // A lone replica holds its short steps' reports back (a block at a time): they still count.
    for (const int64_t replicas : {2, 1}) {
      CAPTURE(replicas);
      auto job = test::small_job(replicas, 50);
      job.faults.throw_worker = replicas - 1;
      job.faults.throw_step = 5;
      auto r = plan_and_run(job, test::small_data(job), {});
      CHECK(r.status == run_status::failed);
      CHECK(r.error.find("worker " + std::to_string(replicas - 1) + " failed") !=
            std::string::npos);
      CHECK(r.error.find("mat1 and mat2 shapes cannot be multiplied") != std::string::npos);
      CHECK(r.steps == 5);
    }
    auto job = test::small_job(2, 50);
    job.faults.throw_worker = 1;
    job.faults.throw_step = 5;
    auto r = plan_and_run(job, test::small_data(job), {});
    CHECK(r.status == run_status::failed);
    CHECK(r.error.find("worker 1 failed") != std::string::npos);
    CHECK(r.error.find("torch_error") != std::string::npos);
    CHECK(r.error.find("mat1 and mat2 shapes cannot be multiplied") != std::string::npos);
    CHECK(r.steps == 5);
    CHECK(!r.final_weights.defined());
  }

  TEST_CASE("a diverging run ends as diverged, with the step and replica") {
    auto job = test::small_job(2, 50);
    job.optimizer.lr = 1e12;
    job.optimizer.momentum = 0;
    auto r = plan_and_run(job, test::small_data(job), {});
    CHECK(r.status == run_status::diverged);
    // "worker 1 failed: troupe::diverged: loss is nan at step 3 on replica 1"
    std::smatch m;
    REQUIRE_MESSAGE(std::regex_search(r.error, m,
                                      std::regex(R"(worker (\d) failed: .*diverged.*loss is )"
                                                 R"(\S+ at step (\d+) on replica (\d))")),
                    r.error);
    CHECK(m[1] == m[3]);                 // the worker that failed is the replica that diverged
    CHECK(std::stoll(m[2]) == r.steps);  // the steps before it completed, not one more
    CHECK(r.steps < 50);
  }

  TEST_CASE("a stop request ends the run after the step in progress") {
    for (auto policy : {policy_kind::sync, policy_kind::local_sgd, policy_kind::async}) {
      CAPTURE(to_string(policy));
      auto job = test::small_job(2, 1000);
      job.parallelism.policy = policy;
      std::atomic<bool> stop{false};
      run_options options;
      options.stop_requested = &stop;
      options.on_progress = [&](const progress_update& p) {
        if (p.step >= 3)  // steps 0, 1 and 2 are complete
          stop = true;
      };
      auto r = plan_and_run(job, test::small_data(job), options);
      CHECK(r.status == run_status::failed);
      CHECK(r.error == "interrupted after 3 steps");
      CHECK(r.steps == 3);
      CHECK(!r.final_weights.defined());
    }
  }

  TEST_CASE("a slowed worker makes the others wait under sync") {
    auto job = test::small_job(2, 10);
    job.faults.slow_worker = 1;
    job.faults.slow_ms = 20;
    const auto records = run_with_metrics(job);
    // In every step worker 1 sleeps before computing, so worker 0 is the one that waits for the
    // combined gradient: its recorded wait exceeds the straggler's, step by step.
    std::map<int64_t, std::map<int64_t, nlohmann::json>> by_step;
    for (const auto& r : records)
      if (r["event"] == "worker_step")
        by_step[r["step"].get<int64_t>()][r["worker"].get<int64_t>()] = r;
    REQUIRE(by_step.size() == 10);
    for (auto& [step, workers] : by_step) {
      CAPTURE(step);
      CHECK(workers[0]["comm_s"].get<double>() > workers[1]["comm_s"].get<double>());
      CHECK(workers[1]["compute_s"].get<double>() > workers[0]["compute_s"].get<double>());
    }
  }

  TEST_CASE("async with max_staleness 0 and one replica is plain training") {
    auto sync = test::small_job(1, 40);
    auto async = sync;
    async.parallelism.policy = policy_kind::async;
    async.parallelism.max_staleness = 0;
    auto data = test::small_data(sync);
    auto a = plan_and_run(sync, data, {});
    auto b = plan_and_run(async, data, {});
    REQUIRE(b.succeeded());
    CHECK(b.steps == 40);
    CHECK(test::max_abs_diff(a.final_weights, b.final_weights) <= 1e-6);
    CHECK(b.staleness_histogram == std::map<int64_t, int64_t>{{0, 40}});
  }

  TEST_CASE("async applies every gradient once and keeps staleness within the bound") {
    // One server, and the server in 3 shards (actors/workers/sharded_server).
    for (auto [bound, shards] :
         {std::pair{std::optional<int64_t>{0}, 1}, std::pair{std::optional<int64_t>{2}, 1},
          std::pair{std::optional<int64_t>{}, 1}, std::pair{std::optional<int64_t>{0}, 3},
          std::pair{std::optional<int64_t>{}, 3}}) {
      CAPTURE(bound.value_or(-1));
      CAPTURE(shards);
      auto job = test::small_job(3, 30);
      job.parallelism.policy = policy_kind::async;
      job.parallelism.ps_shards = shards;
      job.parallelism.max_staleness = bound;
      job.parallelism.staleness_lr_scaling = true;
      // Every push is a full optimizer step on a third of a batch: a smaller lr than sync's.
      job.optimizer.lr = 0.01;
      auto r = plan_and_run(job, test::small_data(job), {});
      REQUIRE(r.succeeded());
      CHECK(r.steps == 30);
      int64_t applied = 0;
      for (const auto& [staleness, count] : r.staleness_histogram) {
        applied += count;
        // A worker may pull while the others are up to 2s+1 pushes each from its clock.
        if (bound)
          CHECK(staleness <= 2 * (2 * *bound + 1));
      }
      CHECK(applied == 3 * 30);
      CHECK(*r.test_accuracy > 0.8);
      int64_t pushes = 0;
      for (const auto& w : r.workers)
        pushes += w.steps;
      CHECK(pushes == 3 * 30);
    }
  }

  TEST_CASE("async with a slowed worker: the bound makes only the fast ones wait") {
    auto job = test::small_job(2, 24);
    job.parallelism.policy = policy_kind::async;
    job.faults.slow_worker = 1;
    // Well above a step's own compute, under a sanitizer's slowdown too: at 10 ms a TSan build
    // once left the fast worker no further ahead unbounded than bounded.
    job.faults.slow_ms = 30;
    job.parallelism.max_staleness = 2;
    auto bounded = plan_and_run(job, test::small_data(job), {});
    REQUIRE(bounded.succeeded());
    CHECK(bounded.workers[0].wait_s > 0);     // the fast worker hit the bound
    CHECK(bounded.workers[1].wait_s == 0.0);  // the slowest never waits
    CHECK(bounded.staleness_histogram.rbegin()->first <= 2 * 2 + 1);
    job.parallelism.max_staleness.reset();
    auto free = plan_and_run(job, test::small_data(job), {});
    REQUIRE(free.succeeded());
    CHECK(free.workers[0].wait_s == 0.0);  // unbounded: never held back
    // ...and so it contributes more of the run's pushes than the straggler.
    CHECK(free.workers[0].steps > free.workers[1].steps);
    // Running ahead freely, the fast worker's gradients meet more versions in between.
    CHECK(free.staleness_histogram.rbegin()->first > bounded.staleness_histogram.rbegin()->first);
  }

  TEST_CASE("a schedule switches policy at its boundaries without restarting the actors") {
    auto job = test::small_job(2, 30);
    job.parallelism.policy = policy_kind::schedule;
    phase_config sync_phase, local_phase, last_phase;
    sync_phase.steps = 10;
    local_phase.policy = policy_kind::local_sgd;
    local_phase.steps = 10;
    local_phase.period = 1;  // local SGD with period 1 is sync: the schedule must equal sync
    job.parallelism.phases = {sync_phase, local_phase, last_phase};
    auto plain = job;
    plain.parallelism.policy = policy_kind::sync;
    plain.parallelism.phases.clear();
    auto data = test::small_data(job);
    auto scheduled = plan_and_run(job, data, {});
    auto reference = plan_and_run(plain, data, {});
    REQUIRE(scheduled.succeeded());
    CHECK(scheduled.steps == 30);
    CHECK(test::max_abs_diff(scheduled.final_weights, reference.final_weights) <= 1e-6);
  }

  TEST_CASE("a schedule records each switch at its exact step and trains on") {
    auto job = test::small_job(2, 40);
    job.parallelism.policy = policy_kind::schedule;
    phase_config first, second, third;
    first.steps = 12;
    second.policy = policy_kind::local_sgd;
    second.steps = 15;
    second.period = 4;
    job.parallelism.phases = {first, second, third};
    run_report r;
    const auto records = run_with_metrics(job, &r);
    CHECK(r.steps == 40);
    CHECK(*r.test_accuracy > 0.9);
    std::vector<std::pair<int64_t, std::string>> switches;
    for (const auto& record : records)
      if (record["event"] == "phase")
        switches.emplace_back(record["step"].get<int64_t>(), record["policy"].get<std::string>());
    CHECK(switches ==
          std::vector<std::pair<int64_t, std::string>>{{12, "local_sgd"}, {27, "sync"}});
  }

  TEST_CASE("clipping: replicas clip the combined gradient, local_sgd replicas their own") {
    for (const bool by_norm : {true, false}) {
      CAPTURE(by_norm);
      const auto unclipped = test::small_job(1, 40);
      auto one = unclipped;
      if (by_norm)
        one.training.clip_grad_norm = 0.2;
      else
        one.training.clip_grad_value = 0.005;
      auto data = test::small_data(one);
      const auto reference = plan_and_run(unclipped, data, {});
      const auto a = plan_and_run(one, data, {});
      REQUIRE(reference.succeeded());
      REQUIRE(a.succeeded());
      // The limit is low enough to change the run, so the comparisons below test clipping.
      CHECK(test::max_abs_diff(a.final_weights, reference.final_weights) > 1e-4);

      // sync clips the replicas' combined gradient: the global batch's, as one replica does.
      for (int64_t replicas : {2, 3}) {
        CAPTURE(replicas);
        auto sync = one;
        sync.parallelism.replicas = replicas;
        const auto b = plan_and_run(sync, data, {});
        REQUIRE(b.succeeded());
        CHECK(test::max_abs_diff(a.final_weights, b.final_weights) <= 1e-6);
      }

      // local_sgd with period 1: a lone replica clips on its local path exactly as sync does.
      auto local = one;
      local.parallelism.policy = policy_kind::local_sgd;
      local.parallelism.period = 1;
      const auto c = plan_and_run(local, data, {});
      REQUIRE_MESSAGE(c.succeeded(), c.error);
      CHECK(c.steps == 40);
      CHECK(test::max_abs_diff(a.final_weights, c.final_weights) <= 1e-6);
      // With 2 replicas each clips its own gradient before its local step (as every process
      // does in PyTorch's local SGD: no gradient is exchanged), and the average of clipped
      // gradients is not the clipped average: unlike without clipping, this is not sync.
      local.parallelism.replicas = 2;
      const auto d = plan_and_run(local, data, {});
      REQUIRE_MESSAGE(d.succeeded(), d.error);
      CHECK(d.steps == 40);
      CHECK(test::max_abs_diff(a.final_weights, d.final_weights) > 1e-4);
    }
  }
}
