// training.precision: bf16 autocast of the forward on float32 weights. The key and its limits;
// a bf16 engine's steps stay near the float32 ones (rounding, not another trajectory) but are
// not the same (the forward did run in bf16); the thread's autocast state is put back. fp16's
// dynamic loss scaling (its float16 forward is CUDA's; tests/gpu runs it there): the scaler's
// rules, a scaled CPU run equal to float32's bit for bit, overflowed steps skipped, its state
// through a checkpoint, and what the tracker writes of it.
#include "core/config/parse_job.hpp"
#include "core/data/synthetic.hpp"
#include "core/ensemble/ensemble_engine.hpp"
#include "core/train/autocast_scope.hpp"
#include "core/train/engine_plans.hpp"
#include "core/train/loss_scaler.hpp"
#include "core/train/replica_engine.hpp"
#include "core/train/run_tracker.hpp"
#include "job_problems.hpp"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <tuple>
#include <vector>

using namespace troupe;
using nlohmann::json;

namespace {

json precision_job(const std::string& precision) {
  return {{"seed", 2},
          {"data", {{"type", "synthetic"}, {"train_samples", 512}, {"test_samples", 128}}},
          {"model", {{"hidden", {64}}}},
          {"training", {{"steps", 20}, {"batch_size", 64}, {"precision", precision}}},
          {"optimizer", {{"momentum", 0.9}}}};
}

}  // namespace

TEST_SUITE("optim") {
  TEST_CASE("training.precision: fp32 by default, bf16 for replicas, fp16 for replicas on GPUs") {
    CHECK(parse_job(json::object()).training.precision == precision_kind::fp32);
    CHECK(!to_json(parse_job(json::object()))["training"].contains("precision"));
    const auto bf16 = parse_job(precision_job("bf16"));
    CHECK(bf16.training.precision == precision_kind::bf16);
    CHECK(to_json(bf16)["training"]["precision"] == "bf16");
    CHECK(test::any_contains(test::job_problems(precision_job("fp8")), "/training/precision"));
    CHECK(test::any_contains(test::job_problems(precision_job("fp16")),
                             "/training/precision: fp16 runs on GPUs"));
    auto fp16 = precision_job("fp16");
    fp16["device"] = "cuda";
    const auto on_gpu = parse_job(fp16);
    CHECK(on_gpu.training.precision == precision_kind::fp16);
    CHECK(on_gpu.training.loss_scale.initial == 65536.0);
    CHECK(to_json(on_gpu)["training"]["loss_scale"].dump() ==
          R"({"initial":65536.0,"growth_interval":2000})");
    auto async = fp16;
    async["parallelism"] = {{"policy", "async"}, {"replicas", 2}};
    CHECK(test::any_contains(test::job_problems(async), "fp16 runs sync, local_sgd and schedules"));
    auto members = fp16;
    members["ensemble"] = {{"members", 2}};
    CHECK(test::any_contains(test::job_problems(members), "a stacked ensemble takes bf16"));
    auto scaled = fp16;
    scaled["training"]["loss_scale"] = {{"initial", 1024}, {"growth_interval", 10}};
    CHECK(parse_job(scaled).training.loss_scale.growth_interval == 10);
    scaled["training"]["loss_scale"] = {{"initial", 0.5}, {"growth_interval", 0}};
    const auto bad = test::job_problems(scaled);
    CHECK(test::any_contains(bad, "/training/loss_scale/initial"));
    CHECK(test::any_contains(bad, "/training/loss_scale/growth_interval"));
    auto unscaled = precision_job("bf16");
    unscaled["training"]["loss_scale"] = {{"initial", 1024}};
    CHECK(test::any_contains(test::job_problems(unscaled),
                             "/training/loss_scale: scales fp16's losses"));
    auto pipeline = precision_job("bf16");
    pipeline["parallelism"] = {{"replicas", 1}, {"stages", 2}, {"micro_batches", 2}};
    CHECK(test::any_contains(test::job_problems(pipeline),
                             "/training/precision: bf16 runs replicas"));
    auto ensemble = precision_job("bf16");
    ensemble["ensemble"] = {{"members", 3}};
    CHECK(!test::any_contains(test::job_problems(ensemble), "/training/precision"));
  }

  TEST_CASE("a bf16 forward trains near the float32 one, and the thread's autocast is put back") {
    const auto data = std::make_shared<const dataset>(make_synthetic(512, 128, 1.0, 2));
    const auto fp32 = parse_job(precision_job("fp32"));
    const auto bf16 = parse_job(precision_job("bf16"));
    const auto start = initial_weights(settings_of(fp32), data->classes);
    replica_engine wide(replica_plan_of(fp32, 0), data, start);
    replica_engine narrow(replica_plan_of(bf16, 0), data, start);
    double largest_loss_gap = 0;
    for (int64_t step = 0; step < 20; ++step) {
      const auto a = wide.compute_gradient(step, true);
      const auto b = narrow.compute_gradient(step, true);
      largest_loss_gap = std::max(largest_loss_gap, std::abs(a.loss - b.loss));
      wide.apply(wide.gradient(), fp32.optimizer.lr);
      narrow.apply(narrow.gradient(), bf16.optimizer.lr);
    }
    CHECK(at::autocast::is_cpu_enabled() == false);
    CHECK((narrow.weights().scalar_type() == at::kFloat));
    const double weight_gap = (wide.weights() - narrow.weights()).abs().max().item<double>();
    CAPTURE(largest_loss_gap);
    CAPTURE(weight_gap);
    CHECK(weight_gap > 0);     // the forward did run in bf16
    CHECK(weight_gap < 0.05);  // bf16 rounding (8 bits of mantissa), not another trajectory
    CHECK(largest_loss_gap < 0.05);
    const auto e = narrow.evaluate();
    CHECK(e.count == 128);
    CHECK(e.metric_sum / 128 > 0.5);
  }

  TEST_CASE("a bf16 stacked ensemble trains near the float32 one") {
    auto j32 = precision_job("fp32");
    j32["ensemble"] = {{"members", 3}};
    auto j16 = precision_job("bf16");
    j16["ensemble"] = {{"members", 3}};
    const auto fp32 = parse_job(j32);
    const auto bf16 = parse_job(j16);
    const auto data = std::make_shared<const dataset>(make_synthetic(512, 128, 1.0, 2));
    ensemble_engine wide(ensemble_plan_of(fp32), data);
    ensemble_engine narrow(ensemble_plan_of(bf16), data);
    for (int64_t step = 0; step < 20; ++step)
      CHECK(std::abs(wide.step(step, fp32.optimizer.lr) - narrow.step(step, bf16.optimizer.lr)) <
            0.05);
    const double gap = (wide.weights() - narrow.weights()).abs().max().item<double>();
    CHECK(gap > 0);
    CHECK(gap < 0.05);
    CHECK(!at::autocast::is_cpu_enabled());
  }

  TEST_CASE("an autocast scope nests and restores, and does nothing for fp32") {
    {
      const autocast_scope none(precision_kind::fp32, c10::DeviceType::CPU);
      CHECK(!at::autocast::is_cpu_enabled());
    }
    {
      const autocast_scope outer(precision_kind::bf16, c10::DeviceType::CPU);
      CHECK(at::autocast::is_cpu_enabled());
      CHECK((at::autocast::get_autocast_cpu_dtype() == at::kBFloat16));
      const auto x = at::randn({4, 8});
      CHECK((at::mm(x, at::randn({8, 2})).scalar_type() == at::kBFloat16));
      {
        const autocast_scope inner(precision_kind::bf16, c10::DeviceType::CPU);
        CHECK(at::autocast::is_cpu_enabled());
      }
      CHECK(at::autocast::is_cpu_enabled());
    }
    CHECK(!at::autocast::is_cpu_enabled());
  }

  TEST_CASE("the loss scaler halves on an overflow, doubles after a run of finite steps") {
    loss_scaler scaler({1024.0, 3});
    CHECK(scaler.scale() == 1024.0);
    CHECK(!scaler.record(false));
    CHECK(scaler.scale() == 512.0);
    CHECK(scaler.record(true));
    CHECK(scaler.record(true));
    CHECK(scaler.scale() == 512.0);
    CHECK(scaler.record(true));  // the third in a row
    CHECK(scaler.scale() == 1024.0);
    CHECK(scaler.record(true));
    CHECK(!scaler.record(false));  // an overflow starts the count again
    CHECK(scaler.record(true));
    CHECK(scaler.record(true));
    CHECK(scaler.scale() == 512.0);
    CHECK(scaler.skipped_steps() == 2);
    loss_scaler copy({1024.0, 3});  // the settings are the job's; the state is the scale's
    copy.load(scaler.save());
    CHECK(copy.save() == scaler.save());
    CHECK(copy.record(true));  // the third finite step since the overflow
    CHECK(copy.scale() == 1024.0);
    for (const auto* garbage :
         {"", "512 1", "512 1 2 3", "-1 0 0", "inf 0 0", "1e300 0 0", "512 -1 0", "x y z"})
      CHECK_THROWS_AS(copy.load(garbage), std::invalid_argument);
    loss_scaler floor({1.0, 2000});
    for (int i = 0; i < 40; ++i)
      floor.record(false);
    CHECK(floor.scale() == loss_scaler::smallest);
    CHECK_THROWS_AS(loss_scaler({0.0, 1}), std::invalid_argument);
  }

  TEST_CASE("fp16's scaled backward on a CPU (float32 forward) equals float32's bit for bit") {
    const auto data = std::make_shared<const dataset>(make_synthetic(512, 128, 1.0, 2));
    auto j16 = precision_job("fp16");
    j16["device"] = "cuda";  // parses; the engine below computes on the CPU, no transfer given
    const auto fp32 = parse_job(precision_job("fp32"));
    const auto fp16 = parse_job(j16);
    const auto start = initial_weights(settings_of(fp32), data->classes);
    replica_engine plain(replica_plan_of(fp32, 0), data, start);
    replica_engine scaled(replica_plan_of(fp16, 0), data, start);
    for (int64_t step = 0; step < 20; ++step) {
      CHECK(plain.compute_gradient(step, true).loss == scaled.compute_gradient(step, true).loss);
      CHECK(at::equal(plain.gradient(), scaled.gradient()));
      plain.apply(plain.gradient(), fp32.optimizer.lr);
      scaled.apply(scaled.gradient(), fp16.optimizer.lr);
    }
    CHECK(at::equal(plain.weights(), scaled.weights()));
    CHECK(scaled.loss_scale() == 65536.0);
    CHECK(scaled.skipped_steps() == 0);
    CHECK(plain.loss_scale() == 0.0);
  }

  TEST_CASE(
      "fp16: an overflowed gradient skips its step and halves the scale, through a "
      "checkpoint too") {
    // Inputs around 1e4: at a scale of 2^127 the first layer's scaled gradient overflows.
    const auto data = std::make_shared<const dataset>(make_synthetic(512, 128, 1.0e4, 2));
    auto j16 = precision_job("fp16");
    j16["device"] = "cuda";
    j16["optimizer"] = {{"lr", 1e-7}};
    j16["training"]["loss_scale"] = {{"initial", 0x1p127}, {"growth_interval", 4}};
    const auto job = parse_job(j16);
    const auto start = initial_weights(settings_of(job), data->classes);
    replica_engine engine(replica_plan_of(job, 0), data, start);
    int64_t step = 0;
    for (; engine.skipped_steps() == step && step < 60; ++step) {
      engine.compute_gradient(step, true);
      engine.apply(engine.gradient(), job.optimizer.lr);
      if (engine.skipped_steps() == step + 1)
        CHECK(at::equal(engine.weights(), start));  // skipped: nothing applied
    }
    const auto skipped = engine.skipped_steps();
    CAPTURE(skipped);
    CHECK(skipped >= 1);
    CHECK(step == skipped + 1);  // the first finite step was applied
    CHECK(!at::equal(engine.weights(), start));
    CHECK(engine.loss_scale() == std::ldexp(1.0, 127 - static_cast<int>(skipped)));
    CHECK(at::isfinite(engine.weights()).all().item<bool>());

    // The scale and its count of finite steps travel with the optimizer's state.
    replica_engine resumed(replica_plan_of(job, 0), data, start);
    resumed.restore(engine.weights(), engine.optimizer_state());
    CHECK(resumed.loss_scale() == engine.loss_scale());
    CHECK(resumed.skipped_steps() == skipped);
    for (int64_t k = 0; k < 6; ++k, ++step) {
      engine.compute_gradient(step, true);
      resumed.compute_gradient(step, true);
      engine.apply(engine.gradient(), job.optimizer.lr);
      resumed.apply(resumed.gradient(), job.optimizer.lr);
    }
    CHECK(at::equal(engine.weights(), resumed.weights()));
    CHECK(resumed.loss_scale() == engine.loss_scale());
    const auto fp32 = parse_job(precision_job("fp32"));
    replica_engine plain(replica_plan_of(fp32, 0), data, start);
    CHECK_THROWS_WITH_AS(resumed.restore(start, plain.optimizer_state()),
                         doctest::Contains("no loss scale"), std::invalid_argument);
  }

  TEST_CASE("the tracker writes a worker's loss scale when it changes, and sums it up") {
    const auto path = std::filesystem::temp_directory_path() / "troupe_loss_scale.jsonl";
    {
      jsonl_writer metrics(path.string());
      run_tracker tracker(1, step_rules(4, 2, 0), &metrics);
      const std::vector<std::tuple<int64_t, double, int64_t>> steps{
          {0, 1024.0, 0}, {1, 512.0, 1}, {2, 512.0, 1}, {3, 1024.0, 1}};
      for (const auto& [step, scale, skipped] : steps)
        tracker.on_loss_scale(0, step, scale, skipped);
      const auto report = tracker.report("", at::Tensor());
      CHECK(to_json(report)["workers"][0]["loss_scale"] == 1024.0);
      CHECK(to_json(report)["workers"][0]["skipped_steps"] == 1);
    }
    std::ifstream in(path);
    std::vector<json> scales;
    for (std::string line; std::getline(in, line);)
      if (json::parse(line)["event"] == "loss_scale")
        scales.push_back(json::parse(line));
    REQUIRE(scales.size() == 3);  // step 2 kept the scale of step 1
    CHECK(scales[1]["step"] == 1);
    CHECK(scales[1]["scale"] == 512.0);
    CHECK(scales[1]["skipped_steps"] == 1);
    std::filesystem::remove(path);
  }
}
