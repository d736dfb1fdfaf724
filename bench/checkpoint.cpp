// Benchmark: what checkpoints cost a run. The Fashion-MNIST MLP (784-256-128-10, Adam, global
// batch 128) on 2 sync replicas trains the same steps without checkpoints (the reference) and
// with one every `--every` steps, alternately, `--repeats` times each; the medians of the
// training-only samples/s give the step-time overhead (target: at most 5% at every 20 steps),
// and those of the whole run's wall time (until the last checkpoint is on disk) what the
// writer's thread costs where it competes with the replicas for the cores.
// The CPU time of whole runs (every thread) says what the checkpoints cost in work, whatever
// else the machine runs; the samples/s are what that work costs the training on these cores.
// It also reports what each checkpoint wrote against the state it holds: the weights and the
// optimizer's state, plus weights.pt (the weights once more, by name, for PyTorch) and how many
// checkpoints were asked for and written.
//
// --model cnn trains configs/fashion_cnn_sync.json's network instead: a step ~10x the MLP's
// compute for a third of its state, where a checkpoint's fixed CPU cost (hashing, encoding,
// fsync) weighs less against 20 steps.
//
//   checkpoint_bench [--steps 1000] [--every 20] [--repeats 5] [--model mlp|cnn] [--data DIR]
#include "bench/bench_models.hpp"
#include "bench/checked_job.hpp"
#include "bench/median.hpp"
#include "core/data/fashion_mnist.hpp"
#include "core/metrics/jsonl_writer.hpp"
#include "core/run/allocator_settings.hpp"
#include "core/train/replica_engine.hpp"
#include "timed_run.hpp"

#include <sys/resource.h>
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

using namespace troupe;
namespace fs = std::filesystem;

namespace {

job_config bench_job(int64_t steps, int64_t every, const std::string& model) {
  job_config job;
  job.name = "bench_checkpoint";
  job.seed = 1;
  job.model = bench::bench_model(model);
  job.optimizer.kind = optimizer_kind::adam;
  job.optimizer.lr = 0.001;
  job.training.epochs = 0;
  job.training.steps = steps;
  job.training.eval_interval = 1 << 30;  // only after the last step
  job.parallelism.replicas = 2;
  job.checkpoint.every_steps = every;
  job.checkpoint.keep = 2;
  return bench::checked_job(job);
}

struct measured {
  double samples_per_s = 0;    ///< training steps only
  double wall_s = 0;           ///< the whole run, until its last checkpoint is on disk
  double cpu_s = 0;            ///< CPU time of the whole run, every thread (user + system)
  std::vector<int64_t> bytes;  ///< per checkpoint written
  std::vector<double> write_s;
};

double process_cpu_s() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}

// One run; with `every` > 0 its checkpoints go into a fresh folder.
measured run_once(const dataset_ptr& data, int64_t steps, int64_t every, const std::string& model) {
  const auto dir = fs::temp_directory_path() / ("troupe-ckpt-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  measured m;
  {
    jsonl_writer metrics((dir / "metrics.jsonl").string());
    run_options options;
    options.metrics = &metrics;
    if (every > 0)
      options.checkpoint_dir = dir.string();
    const auto cpu_start = process_cpu_s();
    const auto t = bench::timed_run(bench_job(steps, every, model), data, 20, steps - 40, options);
    m.cpu_s = process_cpu_s() - cpu_start;
    m.samples_per_s = t.samples_per_s;
    m.wall_s = t.report.wall_s;
  }
  std::ifstream in(dir / "metrics.jsonl");
  for (std::string line; std::getline(in, line);) {
    const auto record = nlohmann::json::parse(line);
    if (record.at("event") != "checkpoint")
      continue;
    if (record.contains("error"))
      throw std::runtime_error("a checkpoint failed: " + record.at("error").get<std::string>());
    m.bytes.push_back(record.at("bytes").get<int64_t>());
    m.write_s.push_back(record.at("seconds").get<double>());
  }
  fs::remove_all(dir);
  return m;
}

using bench::median;

// The state a checkpoint of this job holds: the flat weights and the optimizer's bytes.
std::pair<int64_t, int64_t> state_bytes(const dataset_ptr& data, const job_config& job) {
  replica_engine engine(replica_plan_of(job, 0), data,
                        initial_weights(settings_of(job), data->classes));
  engine.compute_gradient(0, true);
  engine.apply(engine.gradient(), job.optimizer.lr);  // Adam's moments exist after one step
  return {engine.weights().numel() * 4, static_cast<int64_t>(engine.optimizer_state().size())};
}

}  // namespace

int main(int argc, char** argv) {
  keep_step_memory_for_reuse();  // as the troupe program does (core/run/allocator_settings)
  int64_t steps = 1000, every = 20, repeats = 5;
  std::string folder = "/usr/share/datasets/fashion-mnist";
  std::string model = "mlp";
  CLI::App app{"troupe checkpoint benchmark: step-time overhead and bytes written"};
  app.add_option("--steps", steps, "steps per run")->check(CLI::Range(100, 100000));
  app.add_option("--every", every, "checkpoint every this many steps")
      ->check(CLI::Range(1, 100000));
  app.add_option("--repeats", repeats, "runs of each kind")->check(CLI::Range(1, 100));
  app.add_option("--data", folder, "Fashion-MNIST folder");
  app.add_option("--model", model, "mlp (784-256-128-10) or cnn (configs/fashion_cnn_sync.json)")
      ->check(CLI::IsMember({"mlp", "cnn"}));
  CLI11_PARSE(app, argc, argv);
  try {
    auto data = std::make_shared<const dataset>(load_fashion_mnist(folder));
    std::vector<double> without, with, wall_without, wall_with, cpu_without, cpu_with, write_s;
    std::vector<int64_t> bytes;
    std::vector<double> written;
    run_once(data, steps, 0, model);  // warms the caches and the allocator; not counted
    for (int64_t r = 0; r < repeats; ++r) {
      // Alternating which goes first, so that drift favours neither.
      const auto reference = [&] {
        const auto m = run_once(data, steps, 0, model);
        without.push_back(m.samples_per_s);
        wall_without.push_back(m.wall_s);
        cpu_without.push_back(m.cpu_s);
      };
      if (r % 2 == 1)
        reference();
      auto m = run_once(data, steps, every, model);
      with.push_back(m.samples_per_s);
      wall_with.push_back(m.wall_s);
      cpu_with.push_back(m.cpu_s);
      bytes = m.bytes;
      written.push_back(static_cast<double>(m.bytes.size()));
      write_s.insert(write_s.end(), m.write_s.begin(), m.write_s.end());
      if (r % 2 == 0)
        reference();
    }
    const auto [weights, optimizer] = state_bytes(data, bench_job(steps, every, model));
    const double a = median(without), b = median(with);
    const nlohmann::json out = {
        {"benchmark", "checkpoint"},
        {"model", model},
        {"steps", steps},
        {"every_steps", every},
        {"repeats", repeats},
        {"samples_per_s_without", a},
        {"samples_per_s_with", b},
        {"step_time_overhead", a / b - 1},
        {"target_overhead", 0.05},
        {"wall_s_without", median(wall_without)},
        {"wall_s_with", median(wall_with)},
        {"wall_overhead", median(wall_with) / median(wall_without) - 1},
        {"cpu_s_without", median(cpu_without)},
        {"cpu_s_with", median(cpu_with)},
        {"cpu_overhead", median(cpu_with) / median(cpu_without) - 1},
        {"checkpoints_asked_per_run", (steps - 1) / every},
        {"checkpoints_written_per_run", median(written)},
        {"bytes_per_checkpoint", bytes.empty() ? 0 : bytes.back()},
        {"state_bytes", {{"weights", weights}, {"optimizer", optimizer}}},
        {"bytes_over_state_plus_weights_pt",
         bytes.empty()
             ? 0.0
             : static_cast<double>(bytes.back()) / static_cast<double>(2 * weights + optimizer)},
        // null where no checkpoint fell within the run (--every beyond --steps): none was timed.
        {"median_write_s", write_s.empty() ? nlohmann::json() : nlohmann::json(median(write_s))}};
    std::printf("%s\n", out.dump(2).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "checkpoint_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
