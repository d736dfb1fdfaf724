// GPU workers through the actors (CUDA builds, on a GPU): batches reach the device intact, and
// training on one GPU (sync replicas sharing it, pipelines, local SGD, async, a schedule, a
// stacked ensemble), or with a GPU per replica (NCCL), ends at the CPU run's weights within
// float tolerance; captured steps (training.cuda_graph) end at the eager ones'.
#include "../actors/training_fixtures.hpp"
#include "core/device/device_plan.hpp"
#include "core/ensemble/ensemble_engine.hpp"
#include "core/train/replica_engine.hpp"
#include "gpu/worker_device.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>

#include <cmath>

using namespace troupe;

namespace {

double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

// GPU kernels sum in another order than the CPU's: 50 steps of SGD with momentum drift by about
// 1e-6 per weight; 1e-4 still catches a missed or doubled update.
constexpr double gpu_tolerance = 1e-4;

struct cpu_and_gpu {
  run_report cpu, gpu;
};

// `cpu_job` as it is, then on cuda:0, on the same data; both must succeed.
cpu_and_gpu run_on_both(const job_config& cpu_job) {
  const auto data = test::small_data(cpu_job);
  cpu_and_gpu r{plan_and_run(cpu_job, data, {}), {}};
  REQUIRE_MESSAGE(r.cpu.succeeded(), r.cpu.error);
  auto job = cpu_job;
  job.device = {*parse_device("cuda:0")};
  r.gpu = plan_and_run(job, data, {});
  REQUIRE_MESSAGE(r.gpu.succeeded(), r.gpu.error);
  return r;
}

}  // namespace

TEST_SUITE("gpu_training") {
  TEST_CASE("a batch uploads to the worker's device intact") {
    gpu::worker_device device(*parse_device("cuda:0"), "test");
    CHECK(device.device() == c10::Device(c10::kCUDA, 0));
    const auto host = at::randn({64, 1, 28, 28});
    const auto on_device = device.upload(host);
    CHECK(on_device.is_cuda());
    CHECK(at::equal(on_device.to(at::kCPU), host));
  }

  TEST_CASE("sync replicas sharing one GPU end at the CPU run's weights") {
    auto cpu_job = test::small_job(1, 50);
    const auto data = test::small_data(cpu_job);
    const auto on_cpu = plan_and_run(cpu_job, data, {});
    REQUIRE(on_cpu.succeeded());
    for (int64_t replicas : {1, 2, 4}) {
      CAPTURE(replicas);
      auto job = test::small_job(replicas, 50);
      job.device = {*parse_device("cuda:0")};
      const auto on_gpu = plan_and_run(job, data, {});
      REQUIRE_MESSAGE(on_gpu.succeeded(), on_gpu.error);
      CHECK(on_gpu.final_weights.is_cpu());
      CHECK(max_abs_diff(on_gpu.final_weights, on_cpu.final_weights) <= gpu_tolerance);
    }
  }

  TEST_CASE("a stacked ensemble on the GPU ends at the CPU run's weights") {
    auto cpu_job = test::small_job(1, 50);
    cpu_job.ensemble.members = 4;
    cpu_job.ensemble.distinct_data_order = true;
    const auto [on_cpu, on_gpu] = run_on_both(cpu_job);
    // An ensemble ends with each member's state dict (one file each), not one flat vector.
    REQUIRE(on_gpu.member_weights.size() == 4);
    REQUIRE(on_cpu.member_weights.size() == 4);
    for (std::size_t k = 0; k < 4; ++k) {
      const auto& gpu = on_gpu.member_weights[k];
      const auto& cpu = on_cpu.member_weights[k];
      REQUIRE(gpu.size() == cpu.size());
      for (std::size_t i = 0; i < gpu.size(); ++i) {
        CAPTURE(gpu[i].first);
        CHECK(gpu[i].second.is_cpu());
        CHECK(max_abs_diff(gpu[i].second, cpu[i].second) <= gpu_tolerance);
      }
    }
  }

  // Activations and their gradients pass stage to stage on the GPU (each stage on its own
  // stream), the coordinator sums a stage's gradients over the pipelines there.
  TEST_CASE("pipelines on one GPU end at the CPU pipeline's weights") {
    struct layout {
      int64_t replicas, stages, micro_batches;
    };
    for (auto l : {layout{1, 2, 4}, layout{2, 2, 2}, layout{1, 3, 4}}) {
      CAPTURE(l.replicas);
      CAPTURE(l.stages);
      CAPTURE(l.micro_batches);
      auto cpu_job = test::small_job(l.replicas, 50);
      cpu_job.parallelism.stages = l.stages;
      cpu_job.parallelism.micro_batches = l.micro_batches;
      const auto [on_cpu, on_gpu] = run_on_both(cpu_job);
      CHECK(on_gpu.final_weights.is_cpu());
      CHECK(max_abs_diff(on_gpu.final_weights, on_cpu.final_weights) <= gpu_tolerance);
      // The evaluation flows through the stages on the GPU too.
      REQUIRE(on_gpu.test_accuracy.has_value());
      CHECK(std::abs(*on_gpu.test_accuracy - *on_cpu.test_accuracy) <= 0.02);
      // Each stage's busy time is its device time (CUDA events), inside the step's window.
      REQUIRE(on_gpu.bubble_fraction.has_value());
      CHECK(*on_gpu.bubble_fraction >= 0.0);
      CHECK(*on_gpu.bubble_fraction < 1.0);
      for (const auto& w : on_gpu.workers)
        CHECK(w.compute_s > 0.0);
    }
  }

  // Outside sync steps a GPU worker hands its weights (local SGD) or gradient (async) to the host,
  // where the driver averages and the parameter server steps, and takes the result back.
  TEST_CASE("local SGD, async and a schedule on one GPU end at the CPU run's weights") {
    // A compact encoding rounds the host's copies: a last-bit difference of the GPU's sums can
    // round one value to the neighbouring code, a step of the encoding (int8: 1/127 of the
    // largest change), not of float32; those runs are held to a looser bound.
    constexpr double encoded_tolerance = 5e-3;
    struct variant {
      const char* name;
      void (*set)(job_config&);
      double tolerance;
    };
    const variant variants[] = {
        {"local_sgd, period 4, momenta averaged",
         [](job_config& j) {
           j.parallelism.policy = policy_kind::local_sgd;
           j.parallelism.period = 4;
           j.parallelism.average_momenta = true;
         },
         gpu_tolerance},
        // DiLoCo's own outer rate and momentum (0.7, 0.9) diverge on this small job, on the CPU
        // too: a milder outer step, so that both runs train and can be compared.
        {"local_sgd, an outer step, int8 averages",
         [](job_config& j) {
           j.parallelism.policy = policy_kind::local_sgd;
           j.parallelism.period = 5;
           j.parallelism.outer_optimizer.enabled = true;
           j.parallelism.outer_optimizer.lr = 0.5;
           j.parallelism.outer_optimizer.momentum = 0.5;
           j.parallelism.compression = compression_kind::int8;
         },
         encoded_tolerance},
        {"async, 1 worker (one order of pushes)",
         [](job_config& j) {
           j.parallelism.replicas = 1;
           j.parallelism.policy = policy_kind::async;
         },
         gpu_tolerance},
        {"async, 1 worker, bf16 pushes and hand-outs",
         [](job_config& j) {
           j.parallelism.replicas = 1;
           j.parallelism.policy = policy_kind::async;
           j.parallelism.compression = compression_kind::bf16;
         },
         encoded_tolerance},
        {"schedule: sync 20 steps, then local_sgd period 5",
         [](job_config& j) {
           j.parallelism.policy = policy_kind::schedule;
           j.parallelism.phases = {{policy_kind::sync, 20, 8, false},
                                   {policy_kind::local_sgd, 0, 5, false}};
         },
         gpu_tolerance},
    };
    for (const auto& v : variants) {
      const std::string name = v.name;
      CAPTURE(name);
      auto cpu_job = test::small_job(2, 50);
      v.set(cpu_job);
      const auto [on_cpu, on_gpu] = run_on_both(cpu_job);
      CHECK(on_gpu.steps == 50);
      CHECK(max_abs_diff(on_gpu.final_weights, on_cpu.final_weights) <= v.tolerance);
    }
  }

  // training.cuda_graph: after the eager warm-up steps every gradient comes from one replay.
  TEST_CASE("a replica's step captured as a CUDA graph trains as the eager one") {
    auto job = test::small_job(1, 20);
    job.device = {*parse_device("cuda:0")};
    const auto data = test::small_data(job);
    const auto start = initial_weights(settings_of(job), data->classes);
    gpu::worker_device device(*parse_device("cuda:0"), "test");  // one stream for both engines
    replica_engine eager(replica_plan_of(job, 0), data, start, &device);
    job.training.cuda_graph = true;
    replica_engine graphed(replica_plan_of(job, 0), data, start, &device);
    for (int64_t step = 0; step < 20; ++step) {
      const auto a = eager.compute_gradient(step, true);
      const auto b = graphed.compute_gradient(step, true);
      CHECK(std::abs(a.loss - b.loss) <= 1e-5);
      eager.apply(eager.gradient(), job.optimizer.lr);
      graphed.apply(graphed.gradient(), job.optimizer.lr);
    }
    CHECK(graphed.replayed_steps() == 20 - captured_step::warmup_steps);
    CHECK(max_abs_diff(eager.weights(), graphed.weights()) <= 1e-5);
    // An evaluation between steps runs eagerly beside the graph's memory.
    CHECK(graphed.evaluate().count == eager.evaluate().count);
  }

  TEST_CASE("a stacked ensemble's gradients captured as a CUDA graph train as the eager ones") {
    auto job = test::small_job(1, 20);
    job.ensemble.members = 8;
    job.ensemble.distinct_data_order = true;
    job.ensemble.lrs = {0.1, 0.05, 0.2, 0.1, 0.1, 0.02, 0.1, 0.3};
    job.training.clip_grad_norm = 1.0;
    job.device = {*parse_device("cuda:0")};
    const auto data = test::small_data(job);
    gpu::worker_device device(*parse_device("cuda:0"), "test");  // one stream for both engines
    ensemble_engine eager(ensemble_plan_of(job), data, &device);
    job.training.cuda_graph = true;
    ensemble_engine graphed(ensemble_plan_of(job), data, &device);
    for (int64_t step = 0; step < 20; ++step) {
      const double lr = job.optimizer.lr / static_cast<double>(1 + step / 5);  // not recorded
      CHECK(std::abs(eager.step(step, lr) - graphed.step(step, lr)) <= 1e-5);
    }
    CHECK(graphed.replayed_steps() == 20 - captured_step::warmup_steps);
    CHECK(max_abs_diff(eager.weights(), graphed.weights()) <= 1e-5);
    // An evaluation between steps runs eagerly beside the graph's memory.
    CHECK(graphed.evaluate(data->test).count == eager.evaluate(data->test).count);
  }

  // fp16's scale doubles every 2 finite steps here, so it changes while the steps replay.
  TEST_CASE("cuda_graph runs end at the eager runs' weights: sync on a shared GPU, async, fp16") {
    struct variant {
      policy_kind policy;
      precision_kind precision;
    };
    for (const auto v : {variant{policy_kind::sync, precision_kind::fp32},
                         variant{policy_kind::async, precision_kind::fp32},
                         variant{policy_kind::sync, precision_kind::fp16},
                         variant{policy_kind::sync, precision_kind::bf16}}) {
      const int64_t replicas = v.policy == policy_kind::sync ? 2 : 1;
      CAPTURE(replicas);
      CAPTURE(to_string(v.precision));
      auto job = test::small_job(replicas, 50);
      job.parallelism.policy = v.policy;
      job.training.precision = v.precision;
      job.training.loss_scale.growth_interval = 2;
      job.device = {*parse_device("cuda:0")};
      const auto data = test::small_data(job);
      const auto eager = plan_and_run(job, data, {});
      REQUIRE_MESSAGE(eager.succeeded(), eager.error);
      job.training.cuda_graph = true;
      const auto graphed = plan_and_run(job, data, {});
      REQUIRE_MESSAGE(graphed.succeeded(), graphed.error);
      CHECK(max_abs_diff(graphed.final_weights, eager.final_weights) <= gpu_tolerance);
    }
  }

  TEST_CASE("with deterministic, a rerun on the GPU gives the same bits") {
    auto job = test::small_job(2, 50);
    job.device = {*parse_device("cuda:0")};
    job.deterministic = true;
    const auto data = test::small_data(job);
    const auto first = plan_and_run(job, data, {});
    const auto second = plan_and_run(job, data, {});
    REQUIRE_MESSAGE(first.succeeded(), first.error);
    REQUIRE_MESSAGE(second.succeeded(), second.error);
    CHECK(at::equal(first.final_weights, second.final_weights));
  }

  // float16 carries about 3 decimal digits: 50 steps end near float32's weights, not at them,
  // and a scale that starts far too high is brought down by skipped steps, not by a failure.
  TEST_CASE("fp16 with dynamic loss scaling trains near the float32 run on the GPU") {
    auto job = test::small_job(2, 50);
    job.device = {*parse_device("cuda:0")};
    const auto data = test::small_data(job);
    const auto fp32 = plan_and_run(job, data, {});
    REQUIRE_MESSAGE(fp32.succeeded(), fp32.error);
    job.training.precision = precision_kind::fp16;
    const auto fp16 = plan_and_run(job, data, {});
    REQUIRE_MESSAGE(fp16.succeeded(), fp16.error);
    const double gap = max_abs_diff(fp16.final_weights, fp32.final_weights);
    CAPTURE(gap);
    CHECK(gap > 0);  // the forward did run in float16
    CHECK(gap < 0.05);
    CHECK(std::abs(*fp16.final_train_loss - *fp32.final_train_loss) < 0.05);
    REQUIRE(fp16.workers.size() == 2);
    CHECK(fp16.workers[0].loss_scale == 65536.0);
    CHECK(fp16.workers[0].skipped_steps == 0);
    // At 2^24 the scaled gradient of the logits passes float16's largest value (65504).
    job.training.loss_scale.initial = 0x1p24;
    const auto high = plan_and_run(job, data, {});
    REQUIRE_MESSAGE(high.succeeded(), high.error);
    CHECK(high.workers[0].skipped_steps > 0);
    CHECK(high.workers[0].skipped_steps == high.workers[1].skipped_steps);  // sync: in step
    CHECK(high.workers[0].loss_scale <= 0x1p23);
    CHECK(high.workers[0].skipped_steps < 50);  // and then it trained
    CHECK(at::isfinite(high.final_weights).all().item<bool>());
  }

  // The cap is the caching allocator's, for this process: a run over it fails naming it, and
  // the next run, without one, has the whole GPU again.
  TEST_CASE("gpu_memory_mb: a run over its cap fails naming it; the cap goes with the run") {
    auto job = test::small_job(1, 5);
    job.device = {*parse_device("cuda:0")};
    job.gpu_memory_mb = 0.01;  // 10 KB: less than the model's weights
    const auto data = test::small_data(job);
    const auto capped = plan_and_run(job, data, {});
    CHECK(!capped.succeeded());
    CAPTURE(capped.error);
    CHECK(capped.error.find("out of memory") != std::string::npos);
    CHECK(capped.error.find("gpu_memory_mb caps its process at 0.01 MB") != std::string::npos);
    job.gpu_memory_mb.reset();
    const auto free = plan_and_run(job, data, {});
    CHECK_MESSAGE(free.succeeded(), free.error);
  }

  // Reported as skipped where fewer than two GPUs are visible: NCCL needs one per replica.
  TEST_CASE("a GPU per replica sums with NCCL and ends at the CPU run's weights" *
            doctest::skip(local_inventory().cuda_devices < 2)) {
    const int gpus = local_inventory().cuda_devices;
    auto cpu_job = test::small_job(1, 50);
    const auto data = test::small_data(cpu_job);
    const auto on_cpu = plan_and_run(cpu_job, data, {});
    auto job = test::small_job(gpus, 50);
    job.device = {*parse_device("cuda")};
    const auto on_gpus = plan_and_run(job, data, {});
    REQUIRE_MESSAGE(on_gpus.succeeded(), on_gpus.error);
    CHECK(max_abs_diff(on_gpus.final_weights, on_cpu.final_weights) <= gpu_tolerance);
  }
}
