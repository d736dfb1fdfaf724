// training.precision: bf16 autocast of the forward on float32 weights. The key and its limits;
// a bf16 engine's steps stay near the float32 ones (rounding, not another trajectory) but are
// not the same (the forward did run in bf16); the thread's autocast state is put back.
#include "core/config/parse_job.hpp"
#include "core/data/synthetic.hpp"
#include "core/ensemble/ensemble_engine.hpp"
#include "core/train/autocast_scope.hpp"
#include "core/train/engine_plans.hpp"
#include "core/train/replica_engine.hpp"
#include "job_problems.hpp"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <doctest/doctest.h>

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
  TEST_CASE("training.precision: fp32 by default, bf16 for replicas, fp16 not yet") {
    CHECK(parse_job(json::object()).training.precision == precision_kind::fp32);
    CHECK(!to_json(parse_job(json::object()))["training"].contains("precision"));
    const auto bf16 = parse_job(precision_job("bf16"));
    CHECK(bf16.training.precision == precision_kind::bf16);
    CHECK(to_json(bf16)["training"]["precision"] == "bf16");
    CHECK(test::any_contains(test::job_problems(precision_job("fp8")), "/training/precision"));
    CHECK(test::any_contains(test::job_problems(precision_job("fp16")),
                             "/training/precision: fp16 needs dynamic loss scaling"));
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
}
