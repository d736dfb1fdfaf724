// training.cuda_graph without a GPU: the key's rules, and the engines' capture bookkeeping
// (core/device/captured_step) against a stand-in graph whose replay reruns the captured code on
// the tensors the capture saw, as a CUDA graph replays its kernels. What the stand-in cannot
// show (that a replay reads nothing from the host) tests/gpu checks on a GPU.
#include "core/config/parse_job.hpp"
#include "core/data/synthetic.hpp"
#include "core/device/captured_step.hpp"
#include "core/ensemble/ensemble_engine.hpp"
#include "core/errors.hpp"
#include "core/train/replica_engine.hpp"
#include "job_problems.hpp"

#include <doctest/doctest.h>
#include <torch/script.h>

#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <vector>

using namespace troupe;
using nlohmann::json;

namespace {

using test::any_contains;
using test::job_problems;

// A graph on the CPU: capture records the work without running it, replay runs it again, as a
// CUDA graph replays its kernels on the tensors the capture saw.
struct rerun_graph final : step_graph {
  std::function<void()> work;
  int64_t* replays;
  explicit rerun_graph(int64_t* r) : replays(r) {}
  void capture(const std::function<void()>& w) override { work = w; }
  void replay() override {
    ++*replays;
    work();
  }
};

struct graph_transfer final : device_transfer {
  int64_t graphs = 0;
  int64_t replays = 0;
  c10::Device device() const override { return c10::Device(c10::kCPU); }
  at::Tensor upload(const at::Tensor& host) override { return host.clone(); }
  std::unique_ptr<step_graph> new_step_graph() override {
    ++graphs;
    return std::make_unique<rerun_graph>(&replays);
  }
};

}  // namespace

TEST_SUITE("device") {
  TEST_CASE("cuda_graph: GPU replicas' and ensembles' steps, refused elsewhere by key") {
    json graphed = {{"device", "cuda:0"}, {"training", {{"cuda_graph", true}}}};
    CHECK(job_problems(graphed).empty());
    CHECK(parse_job(graphed).training.cuda_graph);
    CHECK(to_json(parse_job(graphed))["training"]["cuda_graph"] == true);
    CHECK(!to_json(parse_job(json::object()))["training"].contains("cuda_graph"));
    CHECK(any_contains(job_problems({{"training", {{"cuda_graph", 1}}}}),
                       "/training/cuda_graph: must be"));
    CHECK(any_contains(job_problems({{"training", {{"cuda_graph", true}}}}),
                       "/training/cuda_graph: captures GPU steps as CUDA graphs, and the job runs "
                       "on the CPU"));
    for (const char* precision : {"fp16", "bf16"}) {
      auto lower = graphed;
      lower["training"]["precision"] = precision;
      CHECK(job_problems(lower).empty());
    }
    auto pipeline = graphed;
    pipeline["parallelism"] = {{"stages", 2}};
    CHECK(any_contains(job_problems(pipeline),
                       "/training/cuda_graph: captures data-parallel replicas' and stacked "
                       "ensembles' steps; pipelines run without it"));
    auto ensemble = graphed;
    ensemble["ensemble"] = {{"members", 2}};
    CHECK(job_problems(ensemble).empty());
  }

  TEST_CASE("cuda_graph: eager warm-up, then one capture replayed on refilled inputs") {
    json spec = {{"seed", 6},
                 {"data", {{"type", "synthetic"}, {"train_samples", 256}, {"test_samples", 64}}},
                 {"model", {{"hidden", {16}}}},
                 {"training", {{"steps", 8}, {"batch_size", 32}}},
                 {"parallelism", {{"replicas", 2}}},
                 {"optimizer", {{"momentum", 0.9}}}};
    auto job = parse_job(spec);
    const auto data = std::make_shared<const dataset>(make_synthetic(256, 64, 1.0, 6));
    const auto start = initial_weights(settings_of(job), data->classes);
    replica_engine plain(replica_plan_of(job, 1), data, start);
    job.training.cuda_graph = true;
    graph_transfer transfer;
    replica_engine graphed(replica_plan_of(job, 1), data, start, &transfer);
    for (int64_t step = 0; step < 8; ++step) {
      // sync's scaled gradient, then local SGD's own (another share: eager, the graph kept).
      const bool sync = step != 5;
      CHECK(plain.compute_gradient(step, sync).loss == graphed.compute_gradient(step, sync).loss);
      CHECK(at::equal(plain.gradient(), graphed.gradient()));
      plain.apply(plain.gradient(), job.optimizer.lr);
      graphed.apply(graphed.gradient(), job.optimizer.lr);
    }
    CHECK(at::equal(plain.weights(), graphed.weights()));
    // Steps 0-2 warm up; 3 captures and replays; 5 has another share; 4, 6, 7 replay.
    CHECK(graphed.replayed_steps() == 4);
    CHECK(transfer.replays == 4);
    CHECK(transfer.graphs == 2);  // the probe at construction, the capture
    // A model that draws (dropout) would replay its masks: refused when the engine is built.
    torch::jit::Module module("Dropped");
    module.register_parameter("w", at::randn({2, 16}).requires_grad_(), false);
    module.define(R"(
      def forward(self, x):
          return torch.dropout(torch.matmul(x.flatten(1), self.w.t()), 0.5, True)
    )");
    const auto path = std::filesystem::temp_directory_path() / "troupe_dropout_module.pt";
    module.save(path.string());
    auto dropout = job;
    dropout.model.kind = model_kind::torchscript;
    dropout.model.path = path.string();
    CHECK_THROWS_WITH_AS(
        replica_engine(replica_plan_of(dropout, 0), data,
                       initial_weights(settings_of(dropout), data->classes), &transfer),
        doctest::Contains("training.cuda_graph: the model draws random numbers"),
        std::invalid_argument);
    std::filesystem::remove(path);
  }

  // fp16's loss scale changes after the capture (skipped steps halve it, finite ones double it):
  // the replays read it from a device tensor refilled each step, not a constant of the capture.
  TEST_CASE("cuda_graph: fp16 replays follow the loss scale's changes as eager steps do") {
    // Inputs around 1e4: at a scale of 2^127 the first layer's scaled gradient overflows.
    const auto data = std::make_shared<const dataset>(make_synthetic(256, 64, 1.0e4, 9));
    auto job =
        parse_job({{"seed", 9},
                   {"device", "cuda"},  // parses; the engines compute on the CPU (float32 forward)
                   {"data", {{"type", "synthetic"}, {"train_samples", 256}, {"test_samples", 64}}},
                   {"model", {{"hidden", {16}}}},
                   {"training",
                    {{"steps", 12},
                     {"batch_size", 32},
                     {"precision", "fp16"},
                     {"loss_scale", {{"initial", 0x1p127}, {"growth_interval", 2}}}}},
                   {"optimizer", {{"lr", 1e-7}}}});
    const auto start = initial_weights(settings_of(job), data->classes);
    replica_engine eager(replica_plan_of(job, 0), data, start);
    job.training.cuda_graph = true;
    graph_transfer transfer;
    replica_engine graphed(replica_plan_of(job, 0), data, start, &transfer);
    std::vector<double> scales;
    for (int64_t step = 0; step < 12; ++step) {
      CHECK(eager.compute_gradient(step, true).loss == graphed.compute_gradient(step, true).loss);
      // Bit for bit, NaN where NaN: an overflowed step's gradient holds infinities, and some
      // CPUs' kernels (an AVX-512 EPYC's OpenBLAS) make NaNs of them, which at::equal calls
      // unequal even in the same places.
      CHECK(at::allclose(eager.gradient(), graphed.gradient(), 0, 0, /*equal_nan=*/true));
      eager.apply(eager.gradient(), job.optimizer.lr);
      graphed.apply(graphed.gradient(), job.optimizer.lr);
      CHECK(graphed.loss_scale() == eager.loss_scale());
      scales.push_back(graphed.loss_scale());
    }
    CHECK(at::equal(eager.weights(), graphed.weights()));
    CHECK(graphed.skipped_steps() == eager.skipped_steps());
    CHECK(graphed.skipped_steps() >= 1);
    CHECK(graphed.replayed_steps() == 12 - captured_step::warmup_steps);
    // The scale moved while the steps replayed.
    CHECK(scales.back() != scales[captured_step::warmup_steps]);
  }

  TEST_CASE("cuda_graph: a stacked ensemble's captured gradients train as its eager ones") {
    for (const bool distinct : {false, true}) {
      CAPTURE(distinct);
      auto job = parse_job(
          {{"seed", 8},
           {"data", {{"type", "synthetic"}, {"train_samples", 256}, {"test_samples", 64}}},
           {"model", {{"hidden", {16}}}},
           {"training", {{"steps", 8}, {"batch_size", 32}, {"clip_grad_norm", 0.5}}},
           {"ensemble",
            {{"members", 3}, {"distinct_data_order", distinct}, {"lrs", {0.1, 0.05, 0.2}}}},
           {"optimizer", {{"momentum", 0.9}}}});
      const auto data = std::make_shared<const dataset>(make_synthetic(256, 64, 1.0, 8));
      ensemble_engine plain(ensemble_plan_of(job), data);
      job.training.cuda_graph = true;
      graph_transfer transfer;
      ensemble_engine graphed(ensemble_plan_of(job), data, &transfer);
      for (int64_t step = 0; step < 8; ++step) {
        const double lr = 0.1 / static_cast<double>(step + 1);  // a schedule: not recorded
        CHECK(plain.step(step, lr) == graphed.step(step, lr));
      }
      CHECK(at::equal(plain.weights(), graphed.weights()));
      CHECK(graphed.replayed_steps() == 8 - captured_step::warmup_steps);
      CHECK(transfer.graphs == 2);  // the probe at construction, the capture
      // A replayed step that diverges names its member, as an eager one does, and steps none.
      auto poisoned = graphed.weights();
      poisoned.fill_(std::numeric_limits<float>::quiet_NaN());
      graphed.set_weights(poisoned);
      CHECK_THROWS_WITH_AS(graphed.step(8, 0.01), doctest::Contains("for ensemble member 0"),
                           diverged_error);
      CHECK(graphed.replayed_steps() == 9 - captured_step::warmup_steps);
    }
  }
}
