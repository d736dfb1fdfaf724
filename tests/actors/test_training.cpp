// Training through the actors: replicas equal one worker on the same global batch, runs are
// deterministic, and a failing worker ends the run with its name and cause instead of a hang.
#include "core/collective/sum_in_order.hpp"
#include "core/optim/outer_optimizer.hpp"
#include "core/run/run_plan.hpp"
#include "core/run/thread_team.hpp"
#include "core/train/replica_engine.hpp"
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

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

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
      CHECK(max_abs_diff(a.final_weights, b.final_weights) <=
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
    CHECK(max_abs_diff(a.final_weights, c.final_weights) <= 1e-5);
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
    }
  }

  TEST_CASE("a worker that throws inside LibTorch ends the run, naming the worker and cause") {
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

  TEST_CASE("local_sgd with period 1 is sync training (SGD with momentum, even and uneven)") {
    for (int64_t replicas : {2, 3}) {
      CAPTURE(replicas);
      auto sync = test::small_job(replicas, 40);
      auto local = sync;
      local.parallelism.policy = policy_kind::local_sgd;
      local.parallelism.period = 1;
      auto data = test::small_data(sync);
      auto a = plan_and_run(sync, data, {});
      auto b = plan_and_run(local, data, {});
      REQUIRE(a.succeeded());
      REQUIRE(b.succeeded());
      CHECK(b.steps == 40);
      CHECK(max_abs_diff(a.final_weights, b.final_weights) <= 1e-6);
    }
  }

  TEST_CASE("local_sgd with a longer period learns, ends on one model, reports every step") {
    for (bool momenta : {false, true}) {
      CAPTURE(momenta);
      auto job = test::small_job(2, 60);
      job.parallelism.policy = policy_kind::local_sgd;
      job.parallelism.period = 7;  // averaging also at evaluations (every 10) and the end
      job.parallelism.average_momenta = momenta;
      int steps_seen = 0;
      run_options options;
      options.on_progress = [&](const progress_update& p) { steps_seen += !p.evaluation; };
      auto r = plan_and_run(job, test::small_data(job), options);
      REQUIRE(r.succeeded());
      CHECK(r.steps == 60);
      CHECK(steps_seen == 60);
      CHECK(*r.test_accuracy > 0.9);
      CHECK(r.workers[1].steps == 60);
      // A longer period must differ from sync: replicas really stepped alone in between.
      auto sync = job;
      sync.parallelism.policy = policy_kind::sync;
      auto s = plan_and_run(sync, test::small_data(job), {});
      CHECK(max_abs_diff(r.final_weights, s.final_weights) > 1e-4);
    }
  }

  // Streaming fragments (parallelism.fragments), with and without DiLoCo's outer step: the run
  // ends exactly where two engines end that step alone and average, by hand, each fragment at
  // the steps the schedule names (and the whole model at evaluations and the last step). With
  // fragment_overlap the engines hand in a copy, go on, and merge the average `overlap` steps
  // later (or before the next average), mixing it into their own values.
  TEST_CASE("streaming fragments average each fragment at its own steps, as done by hand") {
    struct variant {
      bool outer;
      int64_t overlap;
      double mix;
    };
    for (const auto [outer, overlap, mix] : {variant{false, 0, 1.0}, variant{true, 0, 1.0},
                                             variant{false, 1, 0.5}, variant{true, 2, 0.75}}) {
      CAPTURE(outer);
      CAPTURE(overlap);
      auto job = test::small_job(2, 24);  // evaluations after steps 9, 19 and 23
      job.parallelism.policy = policy_kind::local_sgd;
      job.parallelism.period = 4;
      job.parallelism.fragments = 2;
      job.parallelism.outer_optimizer = {outer, 0.7, 0.5, true};
      job.parallelism.fragment_overlap = overlap;
      if (overlap > 0)
        job.parallelism.fragment_mix = mix;
      const auto data = test::small_data(job);
      const auto run = plan_and_run(job, data, {});
      REQUIRE_MESSAGE(run.succeeded(), run.error);
      CHECK(run.steps == 24);

      const auto plan = make_run_plan(job, describe_data(job.data));
      use_plan_threads(plan);  // the workers' OpenBLAS threads (core/run/thread_team.hpp)
      const auto start = initial_weights(settings_of(job), data->classes);
      const auto fragments = fragments_of(plan);
      REQUIRE(fragments.size() == 2);
      replica_engine a(replica_plan_of(plan, 0), data, start);
      replica_engine b(replica_plan_of(plan, 1), data, start);
      outer_optimizer outer_step(job.parallelism.outer_optimizer);
      outer_step.set_base(start.reshape({-1}));
      std::vector<int64_t> fragment_steps;
      struct on_its_way {
        int64_t merge_before;
        int64_t begin;
        at::Tensor average;
      };
      std::optional<on_its_way> in_flight;
      for (int64_t step = 0; step < 24; ++step) {
        if (in_flight && step == in_flight->merge_before) {
          for (auto* e : {&a, &b})
            e->set_weights_part(in_flight->average, in_flight->begin, mix);
          in_flight.reset();
        }
        for (auto* e : {&a, &b}) {
          e->compute_gradient(step, false);
          e->apply(e->gradient(), plan.lr_at(step));
        }
        if (!plan.schedule.averages_after(step))
          continue;
        const auto f = plan.schedule.fragment_after(step);
        if (f >= 0) {
          fragment_steps.push_back(step);
          const auto& part = fragments[static_cast<std::size_t>(f)];
          auto average = weighted_sum_in_order({a.weights().narrow(0, part.begin, part.size),
                                                b.weights().narrow(0, part.begin, part.size)},
                                               {0.5, 0.5});
          if (outer)
            average = outer_step.step_part(average, part.begin);
          if (overlap > 0) {
            in_flight = on_its_way{plan.schedule.merge_before(step), part.begin, average};
            continue;
          }
          a.set_weights_part(average, part.begin);
          b.set_weights_part(average, part.begin);
        } else {
          auto average = weighted_sum_in_order({a.weights(), b.weights()}, {0.5, 0.5});
          if (outer) {
            average = outer_step.step(average);
            outer_step.set_base(average);
          }
          a.set_weights(average);
          b.set_weights(average);
        }
      }
      CHECK(fragment_steps == std::vector<int64_t>{1, 3, 5, 7, 11, 13, 15, 17, 21});
      CHECK(!in_flight);  // merged before the last step's average
      CHECK(at::equal(run.final_weights, a.weights()));
      CHECK(at::equal(a.weights(), b.weights()));
      if (overlap > 0) {  // the overlap changed the training: the merges were really late
        auto waiting = job;
        waiting.parallelism.fragment_overlap = 0;
        waiting.parallelism.fragment_mix.reset();
        const auto waited = plan_and_run(waiting, data, {});
        REQUIRE(waited.succeeded());
        CHECK(!at::equal(waited.final_weights, run.final_weights));
      }
    }
  }

  TEST_CASE("compression: local_sgd and async in int8 and bf16 learn what float32 does, closely") {
    // local_sgd: the replicas end on one model (the run's weights are replica 0's; every one
    // adds the same packed average to the same base), near the float32 run's, yet not equal:
    // the differences really were rounded. Also with streaming fragments (each packed against
    // the last average there, whole until the first evaluation's average gives both sides a
    // base), with DiLoCo's outer step and the overlap.
    struct variant {
      int64_t period;
      int64_t fragments;
      int64_t overlap;
      bool outer;
    };
    auto job = test::small_job(2, 60);
    job.parallelism.policy = policy_kind::local_sgd;
    auto data = test::small_data(job);
    for (const auto [period, fragments, overlap, outer] :
         {variant{7, 1, 0, false}, variant{4, 2, 0, false}, variant{4, 2, 2, true}}) {
      CAPTURE(fragments);
      CAPTURE(overlap);
      job.parallelism.period = period;
      job.parallelism.fragments = fragments;
      job.parallelism.fragment_overlap = overlap;
      job.parallelism.outer_optimizer = {outer, 0.7, 0.5, true};
      const auto plain = plan_and_run(job, data, {});
      REQUIRE(plain.succeeded());
      for (auto kind : {compression_kind::int8, compression_kind::bf16}) {
        CAPTURE(std::string(to_string(kind)));
        auto packed_job = job;
        packed_job.parallelism.compression = kind;
        const auto packed = plan_and_run(packed_job, data, {});
        REQUIRE_MESSAGE(packed.succeeded(), packed.error);
        CHECK(packed.steps == 60);
        CHECK(*packed.test_accuracy > 0.9);
        const double diff = max_abs_diff(plain.final_weights, packed.final_weights);
        CHECK(diff > 0);
        CHECK(diff < 5e-2);
      }
    }
    // async, one replica, max_staleness 0: plain training but for the packing.
    auto async = test::small_job(1, 40);
    async.parallelism.policy = policy_kind::async;
    async.parallelism.max_staleness = 0;
    const auto exact = plan_and_run(async, data, {});
    REQUIRE(exact.succeeded());
    for (auto kind : {compression_kind::int8, compression_kind::bf16}) {
      CAPTURE(std::string(to_string(kind)));
      auto packed_job = async;
      packed_job.parallelism.compression = kind;
      const auto packed = plan_and_run(packed_job, data, {});
      REQUIRE_MESSAGE(packed.succeeded(), packed.error);
      CHECK(packed.steps == 40);
      CHECK(*packed.test_accuracy >= *exact.test_accuracy - 0.02);
      const double diff = max_abs_diff(exact.final_weights, packed.final_weights);
      CHECK(diff > 0);
      CHECK(diff < 5e-2);
    }
  }

  TEST_CASE("adamw under local_sgd and async: one replica of either equals one sync replica") {
    // With one replica, averaging and the parameter server change nothing: what differs is only
    // where the optimizer steps (the replica, the server). With two, averaging AdamW's weights
    // is not stepping on the averaged gradient (the step is not linear): those only train.
    auto sync = test::small_job(1, 30);
    sync.optimizer.kind = optimizer_kind::adamw;
    sync.optimizer.lr = 0.001;
    sync.optimizer.momentum = 0;
    sync.optimizer.weight_decay = 0.05;
    auto data = test::small_data(sync);
    const auto reference = plan_and_run(sync, data, {});
    REQUIRE(reference.succeeded());
    for (auto policy : {policy_kind::local_sgd, policy_kind::async}) {
      CAPTURE(to_string(policy));
      auto job = sync;
      job.parallelism.policy = policy;
      if (policy == policy_kind::local_sgd)
        job.parallelism.period = 3;
      else
        job.parallelism.max_staleness = 0;
      const auto one = plan_and_run(job, data, {});
      REQUIRE_MESSAGE(one.succeeded(), one.error);
      CHECK(max_abs_diff(one.final_weights, reference.final_weights) <= 1e-5);
      job.parallelism.replicas = 2;
      const auto two = plan_and_run(job, data, {});
      REQUIRE_MESSAGE(two.succeeded(), two.error);
      CHECK(*two.test_accuracy >= *reference.test_accuracy - 0.1);
    }
  }

  TEST_CASE("a failure under local_sgd is reported like under sync") {
    auto job = test::small_job(2, 50);
    job.parallelism.policy = policy_kind::local_sgd;
    job.faults.throw_worker = 0;
    job.faults.throw_step = 12;
    auto r = plan_and_run(job, test::small_data(job), {});
    CHECK(r.status == run_status::failed);
    CHECK(r.error.find("worker 0 failed") != std::string::npos);
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
    CHECK(max_abs_diff(a.final_weights, b.final_weights) <= 1e-6);
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
    CHECK(max_abs_diff(scheduled.final_weights, reference.final_weights) <= 1e-6);
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
      CHECK(max_abs_diff(a.final_weights, reference.final_weights) > 1e-4);

      // sync clips the replicas' combined gradient: the global batch's, as one replica does.
      for (int64_t replicas : {2, 3}) {
        CAPTURE(replicas);
        auto sync = one;
        sync.parallelism.replicas = replicas;
        const auto b = plan_and_run(sync, data, {});
        REQUIRE(b.succeeded());
        CHECK(max_abs_diff(a.final_weights, b.final_weights) <= 1e-6);
      }

      // local_sgd with period 1: a lone replica clips on its local path exactly as sync does.
      auto local = one;
      local.parallelism.policy = policy_kind::local_sgd;
      local.parallelism.period = 1;
      const auto c = plan_and_run(local, data, {});
      REQUIRE_MESSAGE(c.succeeded(), c.error);
      CHECK(c.steps == 40);
      CHECK(max_abs_diff(a.final_weights, c.final_weights) <= 1e-6);
      // With 2 replicas each clips its own gradient before its local step (as every process
      // does in PyTorch's local SGD: no gradient is exchanged), and the average of clipped
      // gradients is not the clipped average: unlike without clipping, this is not sync.
      local.parallelism.replicas = 2;
      const auto d = plan_and_run(local, data, {});
      REQUIRE_MESSAGE(d.succeeded(), d.error);
      CHECK(d.steps == 40);
      CHECK(max_abs_diff(a.final_weights, d.final_weights) > 1e-4);
    }
  }
}
