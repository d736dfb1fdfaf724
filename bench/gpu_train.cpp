// Benchmark (CUDA builds): troupe's sync replicas sharing one GPU against a plain LibTorch loop
// on the same GPU, on Fashion-MNIST, same model (the built-in cnn or mlp, or a TorchScript file)
// and global batch; then (--equivalence) the weights of 50 sync steps on the GPU against the same
// 50 on the CPU, both with the job key `deterministic` (TF32 off), and the GPU's run twice.
// Prints one JSON object:
//   {"plain": samples/s, "troupe": [{"replicas": R, "samples_per_s": x, "ratio": x / plain}],
//    "gpu_vs_cpu_max_abs_diff": d or null, "deterministic_rerun_bitwise": true/false or null}
// bench/gpu_figures.py runs it beside the same training written in PyTorch.
// Each figure is the best of `rounds` alternated runs (plain, then each R), so that a GPU
// warming up or a neighbour's burst does not decide the ratio.
#include "actors/run_job.hpp"
#include "bench/plain_loop.hpp"
#include "bench/timed_run.hpp"
#include "core/data/fashion_mnist.hpp"
#include "core/run/allocator_settings.hpp"

#include <ATen/ATen.h>
#include <torch/cuda.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>

using namespace troupe;

namespace {

// "cnn" (one hidden layer of 128 after the conv stack), "mlp" (the default 256, 128), or the
// path of a TorchScript module.
// `members` > 0: a stacked ensemble of that many, in place of the replicas.
job_config bench_job(const std::string& model, int64_t replicas, int64_t steps, int64_t batch,
                     int64_t members = 0, precision_kind precision = precision_kind::fp32,
                     bool cuda_graph = false) {
  job_config job;
  job.name = "gpu_bench";
  job.seed = 1;
  if (model == "cnn") {
    job.model.kind = model_kind::cnn;
    job.model.hidden = {128};
  } else if (model != "mlp") {
    job.model.kind = model_kind::torchscript;
    job.model.path = model;
  }
  job.optimizer.lr = 0.05;
  job.optimizer.momentum = 0.9;
  job.training.epochs = 0;
  job.training.steps = steps;
  job.training.batch_size = batch;
  job.training.eval_interval = 1 << 30;  // only after the last, untimed, step
  job.parallelism.replicas = members > 0 ? 1 : replicas;
  job.ensemble.members = members;
  job.device = {*parse_device("cuda:0")};
  job.training.precision = precision;
  job.training.cuda_graph = cuda_graph;
  return job;
}

precision_kind precision_of(const std::string& name) {
  return name == "fp16"   ? precision_kind::fp16
         : name == "bf16" ? precision_kind::bf16
                          : precision_kind::fp32;
}

void synchronize_cuda() {
  torch::cuda::synchronize();
}

}  // namespace

int main(int argc, char** argv) {
  keep_step_memory_for_reuse();  // as the troupe program does (core/run/allocator_settings)
  std::string data_dir = "/usr/share/datasets/fashion-mnist";
  std::string model = "cnn";
  std::vector<int64_t> replica_counts{1, 2, 4};
  bool equivalence = true;
  int64_t members = 0;
  int64_t steps = 300, warmup = 30, batch = 128, rounds = 3;
  CLI::App app{"troupe GPU training benchmark against a plain LibTorch loop"};
  app.add_option("--data", data_dir, "Fashion-MNIST folder");
  app.add_option("--model", model, "cnn, mlp, or a TorchScript file");
  app.add_option("--replicas", replica_counts, "replica counts to time")
      ->check(CLI::Range(1, 64))
      ->delimiter(',');
  app.add_option("--members", members,
                 "time a stacked ensemble of this many members (no plain loop, no equivalence)")
      ->check(CLI::Range(1, 4096));
  app.add_flag("--equivalence,!--no-equivalence", equivalence,
               "also compare 50 GPU steps with 50 CPU steps");
  app.add_option("--steps", steps, "timed steps")->check(CLI::Range(1, 1000000));
  app.add_option("--warmup", warmup, "untimed steps first")->check(CLI::Range(1, 1000000));
  app.add_option("--batch", batch, "global batch")->check(CLI::Range(4, 100000));
  app.add_option("--rounds", rounds, "alternated rounds; the best of each is kept")
      ->check(CLI::Range(1, 100));
  std::string precision = "fp32";
  app.add_option("--precision", precision,
                 "troupe's runs in fp32, bf16 or fp16 (the plain loop stays float32)")
      ->check(CLI::IsMember({"fp32", "bf16", "fp16"}));
  bool cuda_graph = false;
  app.add_flag("--cuda-graph", cuda_graph,
               "troupe's replicas (or stacked ensemble) capture their step as a CUDA graph "
               "(training.cuda_graph)");
  CLI11_PARSE(app, argc, argv);
  // As a job's rule says (training.batch_size at least parallelism.replicas): every replica
  // trains on a share of the global batch.
  for (const auto r : replica_counts)
    if (batch < r) {
      std::fprintf(stderr,
                   "--batch %lld is smaller than --replicas %lld: a replica would train "
                   "on no rows\n",
                   static_cast<long long>(batch), static_cast<long long>(r));
      return 2;
    }
  try {
    if (!torch::cuda::is_available())
      throw std::runtime_error("no CUDA device is visible");
    auto data = std::make_shared<const dataset>(load_fashion_mnist(data_dir));
    if (members > 0)
      replica_counts = {1};
    double plain = 0;
    std::vector<double> best(replica_counts.size(), 0);
    for (int64_t round = 0; round < rounds; ++round) {
      if (members == 0)
        plain = std::max(
            plain, bench::plain_loop(bench_job(model, 1, warmup + steps, batch), *data, 1, warmup,
                                     steps, at::Device(at::kCUDA, 0), synchronize_cuda));
      for (std::size_t i = 0; i < replica_counts.size(); ++i)
        best[i] = std::max(
            best[i], bench::timed_run(bench_job(model, replica_counts[i], warmup + steps, batch,
                                                members, precision_of(precision), cuda_graph),
                                      data, warmup, steps)
                         .samples_per_s);
    }
    nlohmann::json troupe_runs = nlohmann::json::array();
    for (std::size_t i = 0; i < replica_counts.size(); ++i) {
      nlohmann::json run = {{"replicas", replica_counts[i]}, {"samples_per_s", best[i]}};
      if (members > 0) {  // each of the batch's rows trains every member
        run["members"] = members;
        run["member_samples_per_s"] = best[i] * static_cast<double>(members);
      } else {
        run["ratio"] = best[i] / plain;
      }
      troupe_runs.push_back(run);
    }
    nlohmann::json diff = nullptr, bitwise = nullptr;
    if (equivalence && members == 0) {
      // The same 50 sync steps (2 replicas) on the GPU, twice, and on the CPU.
      auto gpu_job = bench_job(model, 2, 50, batch);
      gpu_job.deterministic = true;
      auto cpu_job = gpu_job;
      cpu_job.device = {device_spec{}};
      const auto on_gpu = plan_and_run(gpu_job, data, {});
      const auto again = plan_and_run(gpu_job, data, {});
      const auto on_cpu = plan_and_run(cpu_job, data, {});
      if (!on_gpu.succeeded() || !again.succeeded() || !on_cpu.succeeded())
        throw std::runtime_error("equivalence runs failed: " + on_gpu.error + again.error +
                                 on_cpu.error);
      diff = (on_gpu.final_weights - on_cpu.final_weights).abs().max().item<double>();
      bitwise = at::equal(on_gpu.final_weights, again.final_weights);
    }
    nlohmann::json out = {{"benchmark", "gpu_train"},
                          {"model", model},
                          {"precision", precision},
                          {"cuda_graph", cuda_graph},
                          {"batch", batch},
                          {"steps", steps},
                          {"plain", members > 0 ? nlohmann::json(nullptr) : nlohmann::json(plain)},
                          {"troupe", troupe_runs},
                          {"gpu_vs_cpu_max_abs_diff", diff},
                          {"deterministic_rerun_bitwise", bitwise}};
    std::printf("%s\n", out.dump().c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpu_train_bench: %s\n", e.what());
    return 1;
  }
}
