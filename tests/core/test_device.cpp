// Devices in the job file: parsing "cpu" / "cuda" / "cuda:N", the job key's shapes and the
// limits of CUDA jobs, the plan-time decision against an inventory (any inventory: the rules
// do not need a GPU to be tested), and the engine's upload-and-prefetch path on the CPU.
#include "core/config/parse_job.hpp"
#include "core/data/synthetic.hpp"
#include "core/device/device_plan.hpp"
#include "core/ensemble/ensemble_engine.hpp"
#include "core/errors.hpp"
#include "core/run/deterministic_kernels.hpp"
#include "core/run/run_plan.hpp"
#include "core/train/replica_engine.hpp"
#include "core/train/stage_engine.hpp"
#include "job_problems.hpp"

#include <ATen/Context.h>
#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>
#include <string>

using namespace troupe;
using nlohmann::json;

namespace {

using test::any_contains;
using test::job_problems;

json replicas_job(int replicas, json device) {
  return {{"parallelism", {{"replicas", replicas}}}, {"device", std::move(device)}};
}

// The message make_device_plan throws, or "" when it plans.
std::string plan_error(const json& j, device_inventory inventory) {
  try {
    make_device_plan(parse_job(j), inventory);
  } catch (const job_error& e) {
    return e.problems().at(0);
  }
  return "";
}

constexpr device_inventory cpu_build{false, 0};
constexpr device_inventory no_gpu{true, 0};
constexpr device_inventory two_gpus{true, 2};

}  // namespace

TEST_SUITE("device") {
  TEST_CASE("device names") {
    CHECK(parse_device("cpu")->str() == "cpu");
    CHECK(parse_device("cuda")->str() == "cuda");
    CHECK_FALSE(parse_device("cuda")->index.has_value());
    CHECK(parse_device("cuda:0")->index == 0);
    CHECK(parse_device("cuda:17")->str() == "cuda:17");
    for (const char* bad : {"", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:+1", "cuda:01", "cuda: 1",
                            "cuda:1x", "cuda:1024", "cuda:99999999999", "cuda:0:1"})
      CHECK_MESSAGE(!parse_device(bad).has_value(), bad);
  }

  TEST_CASE("the device key: one for all workers or one per worker") {
    CHECK(parse_job(json::object()).device == std::vector<device_spec>{device_spec{}});
    CHECK(parse_job(replicas_job(2, "cuda:1")).device.front().index == 1);
    CHECK(parse_job(replicas_job(2, {"cuda:0", "cuda:1"})).device.size() == 2);
    CHECK(any_contains(job_problems(replicas_job(1, "gpu0")),
                       R"(/device: must be "cpu", "cuda" or "cuda:N", got "gpu0")"));
    CHECK(any_contains(job_problems(replicas_job(2, {"cuda:0", 3})),
                       R"(/device/1: must be "cpu", "cuda" or "cuda:N", got 3)"));
    CHECK(any_contains(job_problems(replicas_job(2, json::array())), "/device: must be"));
    CHECK(any_contains(job_problems(replicas_job(3, {"cuda:0", "cuda:1"})),
                       "/device: one device for all workers or one per worker, but the job has "
                       "3 worker(s) and 2 devices were given"));
    CHECK(any_contains(job_problems(replicas_job(2, {"cpu", "cuda:0"})),
                       "/device: the workers of a job run on one kind of device"));
  }

  TEST_CASE("CUDA jobs run every policy and layout, and across nodes") {
    for (const char* policy : {"async", "local_sgd"}) {
      json job = replicas_job(2, "cuda:0");
      job["parallelism"]["policy"] = policy;
      CHECK(!any_contains(job_problems(job), "/device"));
    }
    json pipeline = replicas_job(2, "cuda:0");
    pipeline["parallelism"]["stages"] = 2;
    pipeline["parallelism"]["micro_batches"] = 4;
    CHECK(!any_contains(job_problems(pipeline), "/device"));
    json cluster = replicas_job(2, "cuda");
    cluster["cluster"] = {{"nodes", 2}};
    CHECK(job_problems(cluster).empty());
    const json ensemble = {{"ensemble", {{"members", 4}}}, {"device", "cuda:0"}};
    CHECK(!any_contains(job_problems(ensemble), "/device"));
  }

  TEST_CASE("the resolved job names its devices") {
    CHECK(to_json(parse_job(json::object()))["device"] == "cpu");
    CHECK(to_json(parse_job(replicas_job(2, {"cuda:1", "cuda:0"})))["device"] ==
          json{"cuda:1", "cuda:0"});
  }

  TEST_CASE("deterministic: a boolean, shown only when on, set for the run and put back after") {
    CHECK(!parse_job(json::object()).deterministic);
    CHECK(!to_json(parse_job(json::object())).contains("deterministic"));
    const auto on = parse_job({{"deterministic", true}});
    CHECK(on.deterministic);
    CHECK(to_json(on)["deterministic"] == true);
    CHECK(any_contains(job_problems({{"deterministic", "yes"}}), "/deterministic"));

    auto& context = at::globalContext();
    const bool tf32 = context.allowTF32CuDNN();
    {
      const deterministic_kernels kernels(true);
      CHECK(context.deterministicAlgorithms());
      CHECK(context.deterministicAlgorithmsWarnOnly());
      CHECK(context.deterministicCuDNN());
      CHECK(!context.benchmarkCuDNN());
      CHECK(!context.allowTF32CuDNN());
      CHECK(!context.allowTF32CuBLAS());
      CHECK(std::string(std::getenv("CUBLAS_WORKSPACE_CONFIG")) == ":4096:8");
    }
    CHECK(!context.deterministicAlgorithms());
    CHECK(!context.deterministicCuDNN());
    CHECK(context.allowTF32CuDNN() == tf32);
    {
      const deterministic_kernels off(false);  // touches nothing
      CHECK(!context.deterministicAlgorithms());
    }
  }

  TEST_CASE("gpu_memory_mb: a cap in MB for GPU jobs, refused for CPU ones") {
    CHECK(!parse_job(json::object()).gpu_memory_mb);
    CHECK(!to_json(parse_job(json::object())).contains("gpu_memory_mb"));
    const auto capped = parse_job({{"device", "cuda"}, {"gpu_memory_mb", 2048}});
    CHECK(*capped.gpu_memory_mb == 2048.0);
    CHECK(to_json(capped)["gpu_memory_mb"] == 2048.0);
    CHECK(any_contains(job_problems({{"gpu_memory_mb", 100}}),
                       "/gpu_memory_mb: caps what the job's process holds on its GPUs"));
    for (const auto& bad : {json(0), json(-1), json("2 GB"), json(1e12)})
      CHECK(any_contains(job_problems({{"device", "cuda"}, {"gpu_memory_mb", bad}}),
                         "/gpu_memory_mb"));
  }

  TEST_CASE("a CPU build refuses CUDA at plan time, saying why") {
    CHECK(plan_error(replicas_job(1, "cuda:0"), cpu_build) ==
          "/device: asks for cuda:0, but this build of troupe has no CUDA: it was built against "
          "a CPU-only LibTorch or without NCCL (docs/gpus.md)");
    CHECK(plan_error(replicas_job(1, "cuda"), no_gpu).find("no CUDA device is visible") !=
          std::string::npos);
    CHECK(plan_error(replicas_job(1, "cpu"), cpu_build).empty());
  }

  TEST_CASE("indices are checked against the visible GPUs") {
    CHECK(plan_error(replicas_job(1, "cuda:2"), two_gpus) ==
          "/device: cuda:2 is not visible: this process sees 2 CUDA devices (cuda:0 to cuda:1)");
    CHECK(plan_error(replicas_job(2, {"cuda:0", "cuda:5"}), two_gpus)
              .rfind("/device/1: cuda:5 is not visible", 0) == 0);
  }

  TEST_CASE("replicas share one GPU through the run driver, or have one each with NCCL") {
    const auto shared = make_device_plan(parse_job(replicas_job(4, "cuda:1")), two_gpus);
    CHECK(shared.workers == std::vector<device_spec>(4, *parse_device("cuda:1")));
    CHECK(!shared.gpu_each);
    CHECK(render_device_plan(shared) == "cuda:1 (all 4 workers)");

    const auto each = make_device_plan(parse_job(replicas_job(2, "cuda")), two_gpus);
    CHECK(each.workers[0].str() == "cuda:0");
    CHECK(each.workers[1].str() == "cuda:1");
    CHECK(each.gpu_each);
    CHECK(render_device_plan(each) == "cuda:0 cuda:1");

    // "cuda" spreads 3 replicas over 2 GPUs: some share, some do not, which neither path does.
    CHECK(plan_error(replicas_job(3, "cuda"), two_gpus)
              .find("sync replicas sum gradients either on one shared GPU or with NCCL") !=
          std::string::npos);
    CHECK(!make_device_plan(parse_job(replicas_job(1, "cuda")), two_gpus).gpu_each);
  }

  TEST_CASE("a pipeline's stages each have a GPU, stage s of every pipeline the same one") {
    auto pipelines = [](json device) {
      auto j = replicas_job(2, std::move(device));
      j["parallelism"]["stages"] = 2;
      return j;
    };
    // "cuda" deals each pipeline's stages over the GPUs: stage s on cuda:s for every pipeline.
    const auto dealt = make_device_plan(parse_job(pipelines("cuda")), two_gpus);
    CHECK(render_device_plan(dealt) == "cuda:0 cuda:1 cuda:0 cuda:1");
    CHECK(!dealt.gpu_each);  // the driver sums each stage's gradients, never NCCL
    CHECK(render_device_plan(make_device_plan(parse_job(pipelines("cuda:1")), two_gpus)) ==
          "cuda:1 (all 4 workers)");
    CHECK(render_device_plan(make_device_plan(
              parse_job(pipelines({"cuda:1", "cuda:0", "cuda:1", "cuda:0"})), two_gpus)) ==
          "cuda:1 cuda:0 cuda:1 cuda:0");
    CHECK(plan_error(pipelines({"cuda:0", "cuda:1", "cuda:1", "cuda:1"}), two_gpus) ==
          "/device/2: stage 0 of every pipeline runs on one GPU (the coordinator sums its "
          "gradients there), but worker 2 is on cuda:1 and worker 0 on cuda:0");
    // One pipeline micro-batched on one GPU.
    auto micro = replicas_job(1, "cuda");
    micro["parallelism"]["micro_batches"] = 4;
    CHECK(render_device_plan(make_device_plan(parse_job(micro), two_gpus)) == "cuda:0");
    CHECK(plan_error(pipelines("cuda"), cpu_build).find("this build of troupe has no CUDA") !=
          std::string::npos);
  }

  TEST_CASE("the run plan shows the devices and refuses what this build lacks") {
    auto job = parse_job({{"data", {{"type", "synthetic"}}}});
    const auto facts = describe_data(job.data);
    CHECK(render_plan(make_run_plan(job, facts)).find("  devices: cpu\n") != std::string::npos);
    job.device = {*parse_device("cuda:0")};
    CHECK_THROWS_AS(make_run_plan(job, facts, cpu_build), job_error);
    const auto on_gpu = make_run_plan(job, facts, two_gpus);
    CHECK(render_plan(on_gpu).find("  devices: cuda:0\n") != std::string::npos);
  }

  TEST_CASE("the plan decides once where a sync step's gradients meet") {
    const auto meeting = [](const nlohmann::json& job, const device_inventory& where) {
      auto j = job;
      j["data"] = {{"type", "synthetic"}};
      const auto parsed = parse_job(j);
      return make_run_plan(parsed, describe_data(parsed.data), where).gradients;
    };
    CHECK(meeting(replicas_job(1, "cpu"), cpu_build) == gradient_meeting::local);
    CHECK(meeting(replicas_job(3, "cpu"), cpu_build) == gradient_meeting::shared);
    CHECK(meeting(replicas_job(4, "cuda:1"), two_gpus) == gradient_meeting::driver);
    CHECK(meeting(replicas_job(2, "cuda"), two_gpus) == gradient_meeting::nccl);
    auto across = replicas_job(2, "cpu");
    across["cluster"] = {{"nodes", 2}};
    CHECK(meeting(across, cpu_build) == gradient_meeting::ring);
    // GPU workers on nodes: the ring, through host memory, when they share a GPU index; NCCL
    // between them when each has its own.
    auto across_gpus = replicas_job(2, "cuda:0");
    across_gpus["cluster"] = {{"nodes", 2}};
    CHECK(meeting(across_gpus, two_gpus) == gradient_meeting::ring);
    across_gpus["data"] = {{"type", "synthetic"}};
    CHECK(render_plan(make_run_plan(parse_job(across_gpus), describe_data({}), two_gpus))
              .find("ring all-reduce, each GPU's copied to pinned host memory and the sum back") !=
          std::string::npos);
    across_gpus["device"] = "cuda";
    CHECK(meeting(across_gpus, two_gpus) == gradient_meeting::nccl);
    auto pipeline = replicas_job(2, "cpu");
    pipeline["parallelism"]["stages"] = 2;
    CHECK(meeting(pipeline, cpu_build) == gradient_meeting::driver);
    CHECK(render_plan(make_run_plan(parse_job(replicas_job(3, "cpu")), describe_data({})))
              .find("gradients of sync steps: summed among the replicas in shared memory") !=
          std::string::npos);
    CHECK(render_plan(
              make_run_plan(parse_job(replicas_job(4, "cuda:1")), describe_data({}), two_gpus))
              .find("gradients of sync steps: summed by the run driver in rank order") !=
          std::string::npos);
    // local_sgd averages weights and has no sync steps to speak of.
    auto local = replicas_job(3, "cpu");
    local["parallelism"]["policy"] = "local_sgd";
    CHECK(render_plan(make_run_plan(parse_job(local), describe_data({})))
              .find("gradients of sync steps") == std::string::npos);
  }
}

namespace {

// A transfer that stays on the CPU and counts: the GPU path's bookkeeping (upload, prefetch of
// the next batch, uploads for evaluation), testable without a GPU.
struct counting_transfer final : device_transfer {
  int64_t uploads = 0;
  c10::Device device() const override { return c10::Device(c10::kCPU); }
  at::Tensor upload(const at::Tensor& host) override {
    ++uploads;
    return host.clone();
  }
};

}  // namespace

TEST_SUITE("device") {
  TEST_CASE("an engine with a transfer trains exactly as one without, prefetching each batch") {
    auto job =
        parse_job({{"seed", 4},
                   {"data", {{"type", "synthetic"}, {"train_samples", 256}, {"test_samples", 64}}},
                   {"model", {{"hidden", {16}}}},
                   {"training", {{"steps", 6}, {"batch_size", 32}}},
                   {"optimizer", {{"momentum", 0.9}}}});
    const auto data = std::make_shared<const dataset>(make_synthetic(256, 64, 1.0, 4));
    const auto start = initial_weights(settings_of(job), data->classes);
    replica_engine plain(replica_plan_of(job, 0), data, start);
    counting_transfer transfer;
    replica_engine uploaded(replica_plan_of(job, 0), data, start, &transfer);
    for (int64_t step = 0; step < 6; ++step) {
      const auto a = plain.compute_gradient(step, true);
      const auto b = uploaded.compute_gradient(step, true);
      CHECK(a.loss == b.loss);
      plain.apply(plain.gradient(), job.optimizer.lr);
      uploaded.apply(uploaded.gradient(), job.optimizer.lr);
    }
    CHECK(at::equal(plain.weights(), uploaded.weights()));
    // Images and labels of steps 0..6: step s uses the batch prefetched during step s - 1.
    CHECK(transfer.uploads == 2 * 7);
    const auto e = uploaded.evaluate();
    CHECK(e.count == 64);
    CHECK(transfer.uploads == 2 * 7 + 2);  // one chunk of 64 test rows
    CHECK(plain.evaluate().metric_sum == e.metric_sum);
  }

  TEST_CASE("a stacked ensemble with a transfer trains exactly as one without") {
    for (bool distinct : {false, true}) {
      CAPTURE(distinct);
      auto job = parse_job(
          {{"seed", 3},
           {"data", {{"type", "synthetic"}, {"train_samples", 256}, {"test_samples", 64}}},
           {"model", {{"hidden", {16}}}},
           {"training", {{"steps", 4}, {"batch_size", 32}}},
           {"ensemble",
            {{"members", 3}, {"distinct_data_order", distinct}, {"lrs", {0.1, 0.05, 0.2}}}},
           {"optimizer", {{"momentum", 0.9}}}});
      const auto data = std::make_shared<const dataset>(make_synthetic(256, 64, 1.0, 3));
      ensemble_engine plain(ensemble_plan_of(job), data);
      counting_transfer transfer;
      ensemble_engine uploaded(ensemble_plan_of(job), data, &transfer);
      for (int64_t step = 0; step < 4; ++step)
        CHECK(plain.step(step, job.optimizer.lr) == uploaded.step(step, job.optimizer.lr));
      CHECK(at::equal(plain.weights(), uploaded.weights()));
      CHECK(transfer.uploads == 2 * 4);  // images and labels of each step
      const auto e = uploaded.evaluate(data->test);
      CHECK(transfer.uploads == 2 * 4 + 2);
      CHECK(e.correct == plain.evaluate(data->test).correct);
      CHECK(uploaded.member_weights(1).front().second.is_cpu());
    }
  }

  TEST_CASE("pipeline stages with a transfer train exactly as without, uploading their inputs") {
    const json spec = {
        {"seed", 5},
        {"data", {{"type", "synthetic"}, {"train_samples", 256}, {"test_samples", 64}}},
        {"model", {{"hidden", {16}}}},
        {"training", {{"steps", 3}, {"batch_size", 32}}},
        {"parallelism", {{"stages", 2}, {"micro_batches", 2}}},
        {"optimizer", {{"momentum", 0.9}}}};
    const auto job = parse_job(spec);
    const auto plan = make_run_plan(job, describe_data(job.data));
    const auto data = std::make_shared<const dataset>(make_synthetic(256, 64, 1.0, 5));
    const auto start = initial_weights(settings_of(job), data->classes);
    counting_transfer first_transfer, last_transfer;
    // [0]: plain, [1]: through the transfers.
    std::vector<std::unique_ptr<stage_engine>> first, last;
    for (auto* transfer : {static_cast<counting_transfer*>(nullptr), &first_transfer}) {
      first.push_back(
          std::make_unique<stage_engine>(stage_plan_of(plan, 0, 0), data, start, transfer));
      last.push_back(std::make_unique<stage_engine>(stage_plan_of(plan, 0, 1), data, start,
                                                    transfer ? &last_transfer : nullptr));
    }
    for (int64_t step = 0; step < 3; ++step) {
      for (std::size_t k = 0; k < 2; ++k) {
        first[k]->begin_step(step);
        last[k]->begin_step(step);
        for (int64_t m = 0; m < 2; ++m)
          last[k]->forward(m, first[k]->forward(m, at::Tensor()));
        for (int64_t m = 0; m < 2; ++m)
          first[k]->backward(m, last[k]->backward(m, at::Tensor()));
        first[k]->apply(first[k]->step_gradient(), job.optimizer.lr);
        last[k]->apply(last[k]->step_gradient(), job.optimizer.lr);
      }
      CHECK(last[0]->step_loss() == last[1]->step_loss());
    }
    CHECK(at::equal(first[0]->weights(), first[1]->weights()));
    CHECK(at::equal(last[0]->weights(), last[1]->weights()));
    CHECK(first_transfer.uploads == 3);     // each step's images, once
    CHECK(last_transfer.uploads == 3 * 2);  // each micro-batch's labels
    for (std::size_t k = 0; k < 2; ++k) {
      CHECK(first[k]->eval_chunks() == 1);
      const auto r =
          last[k]->eval_score(0, last[k]->eval_forward(0, first[k]->eval_forward(0, {})));
      CHECK(r.count == 64);
    }
    CHECK(first_transfer.uploads == 3 + 1);
    CHECK(last_transfer.uploads == 3 * 2 + 1);
  }
}
