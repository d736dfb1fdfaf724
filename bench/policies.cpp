// Benchmark: the update policies with a straggler. Two replicas train the Fashion-MNIST MLP
// (784-256-128-10, global batch 128, SGD lr 0.02 momentum 0.9); replica 1 sleeps, every step,
// as long as its own measured step time, so it runs at half speed. For each policy the run
// trains the same number of steps and reports samples/s (training time only) and the test
// accuracy reached, side by side in one JSON document.
//
//   policies [--steps 400] [--data DIR] [--delay-ms D]   (default D: measured step time)
#include "actors/run_job.hpp"
#include "bench/checked_job.hpp"
#include "core/data/fashion_mnist.hpp"
#include "core/run/allocator_settings.hpp"
#include "core/train/replica_engine.hpp"

#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

using namespace troupe;

namespace {

job_config base_job(int64_t steps, int64_t delay_ms) {
  job_config job;
  job.name = "bench_policies";
  job.seed = 1;
  job.model.hidden = {256, 128};
  job.optimizer.lr = 0.02;
  job.optimizer.momentum = 0.9;
  job.training.epochs = 0;
  job.training.steps = steps;
  job.training.eval_interval = 1 << 30;  // only after the last step
  job.parallelism.replicas = 2;
  // One thread each, as the straggler's delay is measured (measure_step_ms): left to the plan,
  // a machine with more cores gave each replica several and the straggler was no longer at half
  // speed.
  job.parallelism.threads_per_replica = 1;
  job.faults.slow_worker = 1;
  job.faults.slow_ms = delay_ms;
  return bench::checked_job(job);
}

// One replica's step (64 rows of the 128 batch) on one thread, measured with troupe's engine.
double measure_step_ms(const job_config& job, const dataset_ptr& data) {
  at::set_num_threads(1);
  replica_engine engine(replica_plan_of(job, 0), data,
                        initial_weights(settings_of(job), data->classes));
  const int warmup = 20, timed = 60;
  std::chrono::steady_clock::time_point start;
  for (int step = 0; step < warmup + timed; ++step) {
    if (step == warmup)
      start = std::chrono::steady_clock::now();
    engine.compute_gradient(step, true);
    engine.apply(engine.gradient(), job.optimizer.lr);
  }
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
             .count() /
         timed;
}

}  // namespace

int main(int argc, char** argv) {
  keep_step_memory_for_reuse();  // as the troupe program does (core/run/allocator_settings)
  int64_t steps = 400;
  int64_t delay_ms = 0;
  std::string folder = "/usr/share/datasets/fashion-mnist";
  CLI::App app{"troupe policies benchmark: sync, async and local_sgd with a straggler"};
  app.add_option("--steps", steps, "steps per run (global batch 128)")
      ->check(CLI::Range(1, 100000));
  app.add_option("--delay-ms", delay_ms, "straggler delay per step (default: one step time)")
      ->check(CLI::Range(0, 100000));
  app.add_option("--data", folder, "Fashion-MNIST folder");
  CLI11_PARSE(app, argc, argv);
  try {
    auto data = std::make_shared<const dataset>(load_fashion_mnist(folder));
    const double step_ms = measure_step_ms(base_job(steps, 0), data);
    // Whole milliseconds (faults.slow_ms), at least one: a step under half a millisecond was
    // given no straggler at all.
    if (delay_ms == 0)
      delay_ms = std::max<int64_t>(1, static_cast<int64_t>(step_ms + 0.5));

    struct variant {
      std::string name;
      std::function<void(parallelism_config&)> set;
    };
    const std::vector<variant> variants{
        {"sync", [](parallelism_config& p) { p.policy = policy_kind::sync; }},
        {"async_s0",
         [](parallelism_config& p) {
           p.policy = policy_kind::async;
           p.max_staleness = 0;
         }},
        {"async_s1",
         [](parallelism_config& p) {
           p.policy = policy_kind::async;
           p.max_staleness = 1;
         }},
        {"async_s4",
         [](parallelism_config& p) {
           p.policy = policy_kind::async;
           p.max_staleness = 4;
         }},
        {"async_unbounded", [](parallelism_config& p) { p.policy = policy_kind::async; }},
        {"local_sgd_p1",
         [](parallelism_config& p) {
           p.policy = policy_kind::local_sgd;
           p.period = 1;
         }},
        {"local_sgd_p8",
         [](parallelism_config& p) {
           p.policy = policy_kind::local_sgd;
           p.period = 8;
         }},
    };
    nlohmann::ordered_json results = nlohmann::ordered_json::object();
    for (const auto& v : variants) {
      auto job = base_job(steps, delay_ms);
      v.set(job.parallelism);
      const auto r = plan_and_run(job, data, {});
      if (!r.succeeded())
        throw std::runtime_error(v.name + ": " + r.error);
      // The fast worker's time spent not computing: waiting for the combined gradient or
      // average (sync, local_sgd) or the server's weights (async), and held back by the
      // staleness bound (async). wait_s alone is only the last, and read 0 for sync.
      const auto& fast = r.workers[0];
      nlohmann::ordered_json row = {{"samples_per_s", r.samples_per_s()},
                                    {"test_accuracy", r.test_accuracy.value_or(0)},
                                    {"fast_worker_wait_fraction",
                                     r.wall_s > 0 ? (fast.comm_s + fast.wait_s) / r.wall_s : 0.0}};
      if (!r.staleness_histogram.empty())
        row["max_staleness_seen"] = r.staleness_histogram.rbegin()->first;
      results[v.name] = row;
      std::fprintf(stderr, "%-16s %8.0f samples/s  accuracy %.4f\n", v.name.c_str(),
                   r.samples_per_s(), r.test_accuracy.value_or(0));
    }
    const double sync_rate = results["sync"]["samples_per_s"].get<double>();
    for (auto& [name, row] : results.items())
      row["speedup_over_sync"] = row["samples_per_s"].get<double>() / sync_rate;
    nlohmann::ordered_json out = {{"benchmark", "policies"},
                                  {"model", "mlp 784-256-128-10"},
                                  {"batch", 128},
                                  {"steps", steps},
                                  {"samples", steps * 128},
                                  {"replica_step_ms", step_ms},
                                  {"straggler_delay_ms", delay_ms},
                                  {"results", results}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "policies: %s\n", e.what());
    return 1;
  }
}
