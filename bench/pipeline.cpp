// Benchmark: a 2-stage pipeline (one thread per stage) against the plain single-thread LibTorch
// loop on the same work, and the measured bubble fraction against (P-1)/(M+P-1), for
// M = 1, 2, 4, 8 micro-batches. Variants alternate round by round in this one process and the
// medians are reported, so machine noise hits them alike.
//
//   pipeline [--steps 40] [--warmup 10] [--batch 1024] [--rounds 3] [--hidden 1024,512]
//            [--schedule 1f1b|gpipe] [--data DIR]
//
// The model is an MLP on Fashion-MNIST; the balanced split puts fc1 on stage 0 and the rest on
// stage 1. samples/s counts the timed steps only (evaluation and set-up are outside).
#include "actors/run_job.hpp"
#include "bench/checked_job.hpp"
#include "bench/median.hpp"
#include "bench/plain_loop.hpp"
#include "bench/timed_run.hpp"
#include "core/data/fashion_mnist.hpp"
#include "core/pipeline/pipeline_schedule.hpp"
#include "core/run/allocator_settings.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

using namespace troupe;

namespace {

struct bench_options {
  int64_t steps = 40;
  int64_t warmup = 10;
  int64_t batch = 1024;
  int64_t rounds = 3;
  std::vector<int64_t> hidden{1024, 512};
  std::string schedule = "1f1b";
  std::string data = "/usr/share/datasets/fashion-mnist";
};

job_config bench_job(const bench_options& o, int64_t micro_batches) {
  job_config job;
  job.name = "bench_pipeline";
  job.seed = 1;
  job.model.hidden = o.hidden;
  job.optimizer.lr = 0.02;
  job.optimizer.momentum = 0.9;
  job.training.epochs = 0;
  job.training.steps = o.warmup + o.steps;
  job.training.batch_size = o.batch;
  job.training.eval_interval = 1 << 30;  // only after the last (untimed) step
  job.parallelism.stages = 2;
  // One thread per stage, as the JSON says and the plain loop runs: left to the plan, a machine
  // with more cores gave each stage several.
  job.parallelism.threads_per_replica = 1;
  job.parallelism.micro_batches = micro_batches;
  job.parallelism.schedule =
      o.schedule == "gpipe" ? pipeline_schedule_kind::gpipe : pipeline_schedule_kind::one_f_one_b;
  return bench::checked_job(job);
}

struct pipeline_result {
  double samples_per_s = 0;
  double bubble = 0;
  std::vector<double> stage_busy_s;
};

pipeline_result pipeline_run(const bench_options& o, const job_config& job, dataset_ptr data) {
  const auto timed = bench::timed_run(job, std::move(data), o.warmup, o.steps);
  const auto& report = timed.report;
  pipeline_result r;
  r.samples_per_s = timed.samples_per_s;
  r.bubble = report.bubble_fraction.value_or(0);
  for (const auto& w : report.workers)
    r.stage_busy_s.push_back(w.compute_s);
  return r;
}

using bench::median;

}  // namespace

int main(int argc, char** argv) {
  keep_step_memory_for_reuse();  // as the troupe program does (core/run/allocator_settings)
  bench_options o;
  CLI::App app{"troupe pipeline benchmark: bubble and throughput of 2 stages"};
  app.add_option("--steps", o.steps, "timed steps per run")->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", o.warmup, "untimed steps first")->check(CLI::Range(1, 1000000));
  app.add_option("--batch", o.batch, "global batch")->check(CLI::Range(8, 100000));
  app.add_option("--rounds", o.rounds, "rounds of every variant")->check(CLI::Range(1, 100));
  app.add_option("--hidden", o.hidden, "hidden widths of the MLP")->delimiter(',');
  app.add_option("--schedule", o.schedule, "1f1b or gpipe")
      ->check(CLI::IsMember({"1f1b", "gpipe"}));
  app.add_option("--data", o.data, "Fashion-MNIST folder");
  CLI11_PARSE(app, argc, argv);
  try {
    auto data = std::make_shared<const dataset>(load_fashion_mnist(o.data));
    const std::vector<int64_t> micro_batches{1, 2, 4, 8};
    std::vector<double> plain;
    std::vector<std::vector<pipeline_result>> runs(micro_batches.size());
    for (int64_t round = 0; round < o.rounds; ++round) {
      plain.push_back(bench::plain_loop(bench_job(o, 1), *data, 1, o.warmup, o.steps));
      for (std::size_t i = 0; i < micro_batches.size(); ++i)
        runs[i].push_back(pipeline_run(o, bench_job(o, micro_batches[i]), data));
    }
    const double plain_rate = median(plain);
    nlohmann::json rows = nlohmann::json::array();
    for (std::size_t i = 0; i < micro_batches.size(); ++i) {
      std::vector<double> rates, bubbles, busy0, busy1;
      for (const auto& r : runs[i]) {
        rates.push_back(r.samples_per_s);
        bubbles.push_back(r.bubble);
        busy0.push_back(r.stage_busy_s.at(0));
        busy1.push_back(r.stage_busy_s.at(1));
      }
      const double predicted = predicted_bubble_fraction(2, micro_batches[i]);
      const double measured = median(bubbles);
      rows.push_back({{"micro_batches", micro_batches[i]},
                      {"predicted_bubble", predicted},
                      {"measured_bubble", measured},
                      {"difference_points", (measured - predicted) * 100},
                      {"within_5_points", std::abs(measured - predicted) <= 0.05},
                      {"stage_busy_ratio", median(busy1) / median(busy0)},
                      {"samples_per_s", median(rates)},
                      {"ratio_to_plain_1_thread", median(rates) / plain_rate}});
    }
    nlohmann::json out = {{"benchmark", "pipeline"},
                          {"model_hidden", o.hidden},
                          {"batch", o.batch},
                          {"schedule", o.schedule},
                          {"stages", 2},
                          {"threads_per_stage", 1},
                          {"timed_steps", o.steps},
                          {"rounds", o.rounds},
                          {"plain_1_thread_samples_per_s", plain_rate},
                          {"pipelines", rows}};
    std::printf("%s\n", out.dump(2).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "pipeline: %s\n", e.what());
    return 1;
  }
}
