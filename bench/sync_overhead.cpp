// Benchmark: troupe's synchronous replicas against a plain LibTorch training loop on the same
// model, data and global batch. One run of this program measures one variant and prints one
// JSON object; bench/sync_overhead.py alternates the variants (and PyTorch DDP) and reports
// the ratios.
//
//   sync_overhead --variant plain  --threads T   [--steps N --warmup W --batch B --data DIR]
//   sync_overhead --variant engine --threads T   [...]   (troupe's replica compute, no actors)
//   sync_overhead --variant troupe --replicas R --threads T  [...]
//   sync_overhead --variant engines --replicas R --threads T [...]  (R engines at once, no
//   exchange)
//   ... --script FILE trains a TorchScript module instead of --model (bench/script_model.py)
//
// samples/s counts the N timed steps after W warm-up steps; data loading, model building and
// evaluation are outside the timed region in both variants.
#include "actors/run_job.hpp"
#include "bench/bench_models.hpp"
#include "bench/checked_job.hpp"
#include "bench/plain_loop.hpp"
#include "bench/timed_run.hpp"
#include "core/data/data_source.hpp"
#include "core/data/fashion_mnist.hpp"
#include "core/run/allocator_settings.hpp"
#include "core/run/run_plan.hpp"
#include "core/train/replica_engine.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <sys/resource.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

using namespace troupe;
using clock_type = std::chrono::steady_clock;

namespace {

struct bench_options {
  std::string variant = "plain";
  int64_t replicas = 1;
  int64_t threads = 1;
  int64_t steps = 300;
  int64_t warmup = 30;
  int64_t batch = 128;
  std::string data = "/usr/share/datasets/fashion-mnist";
  std::string model = "mlp";
  std::string script;  ///< a TorchScript file instead of the built-in model
};

job_config bench_job(const bench_options& o) {
  job_config job;
  job.name = "bench";
  job.seed = 1;
  job.model = bench::bench_model(o.model);
  if (!o.script.empty()) {
    job.model.kind = model_kind::torchscript;
    job.model.path = o.script;
  }
  job.optimizer.lr = 0.05;
  job.optimizer.momentum = 0.9;
  job.training.epochs = 0;
  job.training.steps = o.warmup + o.steps;
  job.training.batch_size = o.batch;
  job.training.eval_interval = 1 << 30;  // evaluate only after the last (untimed) step
  job.parallelism.replicas = o.replicas;
  job.parallelism.threads_per_replica = o.threads;
  return bench::checked_job(job);
}

// troupe's replica compute without actors: separates the engine's cost from messaging's. With
// --replicas R, replica 0's share of each global batch alone, scaled to the global batch: what R
// replicas would reach if they ran side by side on R free cores and exchanged for nothing.
double engine_loop(const bench_options& o, const job_config& job, dataset_ptr data,
                   nlohmann::json& detail) {
  at::set_num_threads(static_cast<int>(o.threads));
  replica_engine engine(replica_plan_of(job, 0), data,
                        initial_weights(settings_of(job), data->classes));
  clock_type::time_point start;
  double compute_s = 0, apply_s = 0;
  for (int64_t step = 0; step < o.warmup + o.steps; ++step) {
    if (step == o.warmup)
      start = clock_type::now();
    const auto t0 = clock_type::now();
    engine.compute_gradient(step, true);
    const auto t1 = clock_type::now();
    engine.apply(engine.gradient(), job.optimizer.lr);
    if (step >= o.warmup) {
      compute_s += std::chrono::duration<double>(t1 - t0).count();
      apply_s += std::chrono::duration<double>(clock_type::now() - t1).count();
    }
  }
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  detail = {{"compute_ms_per_step", compute_s * 1e3 / static_cast<double>(o.steps)},
            {"apply_ms_per_step", apply_s * 1e3 / static_cast<double>(o.steps)}};
  return static_cast<double>(o.steps * o.batch) / seconds;
}

// R engines at once, each on a thread of its own with its share of every global batch, none
// exchanging anything: what this machine gives R replicas side by side (caches, memory
// bandwidth and cores shared) before any synchronisation costs. The clock starts once every
// thread has finished its warm-up and stops when the last one is done.
double engines_side_by_side(const bench_options& o, const job_config& job, dataset_ptr data) {
  const auto weights = initial_weights(settings_of(job), data->classes);
  std::atomic<int64_t> warmed{0};
  std::vector<std::thread> threads;
  clock_type::time_point start;
  for (int64_t rank = 0; rank < o.replicas; ++rank)
    threads.emplace_back([&, rank] {
      at::set_num_threads(static_cast<int>(o.threads));
      replica_engine engine(replica_plan_of(job, rank), data, weights.clone());
      for (int64_t step = 0; step < o.warmup + o.steps; ++step) {
        if (step == o.warmup) {
          if (warmed.fetch_add(1) + 1 == o.replicas)
            start = clock_type::now();
          while (warmed.load() < o.replicas)
            std::this_thread::yield();
        }
        engine.compute_gradient(step, true);
        engine.apply(engine.gradient(), job.optimizer.lr);
      }
    });
  for (auto& t : threads)
    t.join();
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  return static_cast<double>(o.steps * o.batch) / seconds;
}

// What R replicas (a plain loop: one) hold by design, in MB: each its weights, gradient and
// optimizer buffers (float32, the plan's flat size), and together the global batch's rows and
// labels. bench/sync_overhead.py sets the peak resident memory against it.
double state_mb(const bench_options& o, const job_config& job, const dataset& data) {
  const auto plan = make_run_plan(job, facts_of(data));
  const int64_t optimizer_buffers = job.optimizer.kind == optimizer_kind::adam ? 2
                                    : job.optimizer.momentum > 0               ? 1
                                                                               : 0;
  const auto replica_bytes = static_cast<double>(plan.model.flat_size()) * 4.0 *
                             static_cast<double>(2 + optimizer_buffers);
  const auto row_bytes =
      static_cast<double>(c10::multiply_integers(data.train.images.row_shape())) * 4.0;
  const auto batch_bytes = static_cast<double>(o.batch) * (row_bytes + 8.0);
  return (static_cast<double>(o.replicas) * replica_bytes + batch_bytes) / (1024.0 * 1024.0);
}

double troupe_sync(const bench_options& o, const job_config& job, dataset_ptr data) {
  return bench::timed_run(job, std::move(data), o.warmup, o.steps).samples_per_s;
}

}  // namespace

int main(int argc, char** argv) {
  // As the troupe program does (core/run/allocator_settings), and for the plain loops too, so
  // that the comparison stays between training loops, not allocator settings.
  keep_step_memory_for_reuse();
  bench_options o;
  CLI::App app{"troupe sync overhead benchmark (one variant per run)"};
  app.add_option("--variant", o.variant,
                 "plain, engine (one replica's share, scaled), engines (R side by side) or troupe")
      ->check(CLI::IsMember({"plain", "engine", "engines", "troupe"}));
  app.add_option("--replicas", o.replicas, "troupe replicas")->check(CLI::Range(1, 64));
  app.add_option("--threads", o.threads, "intra-op threads per replica")->check(CLI::Range(1, 64));
  app.add_option("--steps", o.steps, "timed steps")->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", o.warmup, "untimed steps first")->check(CLI::Range(1, 1000000));
  app.add_option("--batch", o.batch, "global batch")->check(CLI::Range(1, 100000));
  app.add_option("--data", o.data, "Fashion-MNIST folder");
  app.add_option("--model", o.model, "mlp (784-256-128-10) or cnn (configs/fashion_cnn_sync.json)")
      ->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--script", o.script,
                 "a TorchScript file to train instead (bench/script_model.py)")
      ->check(CLI::ExistingFile);
  CLI11_PARSE(app, argc, argv);
  if (o.variant == "plain" && o.replicas != 1) {
    std::fprintf(stderr, "--replicas applies to --variant troupe and engine only\n");
    return 2;
  }
  try {
    auto data = std::make_shared<const dataset>(load_fashion_mnist(o.data));
    const auto job = bench_job(o);
    nlohmann::json detail = nlohmann::json::object();
    const double rate = o.variant == "plain"
                            ? bench::plain_loop(job, *data, o.threads, o.warmup, o.steps)
                        : o.variant == "engine"  ? engine_loop(o, job, data, detail)
                        : o.variant == "engines" ? engines_side_by_side(o, job, data)
                                                 : troupe_sync(o, job, data);
    rusage usage{};
    ::getrusage(RUSAGE_SELF, &usage);
    nlohmann::json out = {{"variant", o.variant},
                          {"model", o.script.empty() ? o.model : o.script},
                          {"replicas", o.replicas},
                          {"threads", o.threads},
                          {"batch", o.batch},
                          {"steps", o.steps},
                          {"samples_per_s", rate},
                          {"peak_rss_mb", static_cast<double>(usage.ru_maxrss) / 1024.0},
                          {"state_mb", state_mb(o, job, *data)}};
    out.update(detail);
    std::printf("%s\n", out.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sync_overhead: %s\n", e.what());
    return 1;
  }
}
