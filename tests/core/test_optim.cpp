// Gradient clipping equals LibTorch's torch::nn::utils::clip_grad_norm_ / clip_grad_value_ (on a
// flat buffer and on a stacked ensemble's per-member slices), and learning_rate /
// describe_schedule at hand-computed points. tests/python/check_lr_schedules.py compares whole
// schedules with PyTorch's lr_scheduler.
#include "core/optim/clip_gradient.hpp"
#include "core/optim/lr_schedule.hpp"
#include "core/optim/outer_optimizer.hpp"
#include "flat_models.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <torch/types.h>
// clip_grad.h uses torch::Tensor, torch::stack, ... without including them.
#include <torch/nn/utils/clip_grad.h>

#include <cmath>
#include <string>
#include <vector>

using namespace troupe;
using troupe::testing::max_abs_diff;

namespace {

constexpr double pi = 3.14159265358979323846;

const std::vector<std::vector<int64_t>> clip_shapes{{3, 4}, {5}, {2, 2, 3}, {1}};

// Values for the parameters of `clip_shapes`, as one flat buffer.
at::Tensor flat_values(double scale, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  int64_t n = 0;
  for (const auto& s : clip_shapes)
    n += c10::multiply_integers(s);
  return at::randn({n}, gen, at::kFloat) * scale;
}

// The same values as the gradients of separate parameters, for LibTorch's clip_grad_*_.
std::vector<torch::Tensor> parameters_with_gradients(const at::Tensor& flat) {
  std::vector<torch::Tensor> params;
  int64_t offset = 0;
  for (const auto& s : clip_shapes) {
    const auto n = c10::multiply_integers(s);
    auto p = torch::zeros(s, torch::requires_grad());
    p.mutable_grad() = flat.slice(0, offset, offset + n).reshape(s).clone();
    params.push_back(p);
    offset += n;
  }
  return params;
}

at::Tensor flattened_gradients(const std::vector<torch::Tensor>& params) {
  std::vector<at::Tensor> parts;
  for (const auto& p : params)
    parts.push_back(p.grad().reshape({-1}));
  return at::cat(parts);
}

training_config clip_norm(double limit) {
  training_config t;
  t.clip_grad_norm = limit;
  return t;
}

training_config clip_value(double limit) {
  training_config t;
  t.clip_grad_value = limit;
  return t;
}

optimizer_config with_schedule(lr_schedule_kind kind, double lr = 0.1) {
  optimizer_config o;
  o.lr = lr;
  o.schedule.kind = kind;
  return o;
}

}  // namespace

TEST_SUITE("optim") {
  TEST_CASE("the outer optimizer steps the pseudo-gradient as torch.optim.SGD with Nesterov does") {
    // Printed by torch.optim.SGD([p], lr=0.7, momentum=0.9, nesterov=True), p starting at the
    // base, stepped three times with p.grad = p - average (Debian's python3-torch).
    outer_optimizer outer({true, 0.7, 0.9, true});
    outer.set_base(at::tensor({0.5f, -1.25f, 2.0f, 0.0f}));
    const std::vector<at::Tensor> averages = {at::tensor({0.25f, -1.0f, 2.5f, 0.125f}),
                                              at::tensor({0.0f, -0.5f, 2.25f, 0.5f}),
                                              at::tensor({-0.25f, -0.75f, 1.5f, 0.25f})};
    const std::vector<std::vector<float>> expected = {
        {0.16750000417232513f, -0.9175000190734863f, 2.6649999618530273f, 0.16624999046325684f},
        {-0.19702498614788055f, -0.2204749882221222f, 2.396549940109253f, 0.6810125112533569f},
        {-0.4900292158126831f, -0.5604457855224609f, 1.2239835262298584f, 0.36078962683677673f}};
    for (std::size_t k = 0; k < averages.size(); ++k) {
      const auto next = outer.step(averages[k]);
      CHECK(at::equal(next, at::tensor(expected[k])));
      outer.set_base(next);
    }
    // A checkpoint's state continues the same steps.
    outer_optimizer again({true, 0.7, 0.9, true});
    again.restore(outer.base().clone(), outer.momentum_buffer().clone());
    CHECK(at::equal(again.step(averages[0]), outer.step(averages[0])));
    CHECK_THROWS_AS(outer.step(at::zeros({3})), std::invalid_argument);
    CHECK_THROWS_AS(outer_optimizer({true}).step(averages[0]), std::logic_error);
  }

  TEST_CASE("the outer optimizer's fragment steps are its whole steps, value by value") {
    for (const bool nesterov : {true, false}) {
      CAPTURE(nesterov);
      const auto base = at::randn({10});
      const std::vector<at::Tensor> averages = {at::randn({10}), at::randn({10}), at::randn({10})};
      outer_optimizer whole({true, 0.7, 0.9, nesterov});
      outer_optimizer parts({true, 0.7, 0.9, nesterov});
      whole.set_base(base);
      parts.set_base(base);
      for (const auto& average : averages) {
        const auto next = whole.step(average);
        whole.set_base(next);
        // The two fragments [0, 4) and [4, 10), stepped one after the other.
        const auto first = parts.step_part(average.narrow(0, 0, 4), 0);
        const auto second = parts.step_part(average.narrow(0, 4, 6), 4);
        CHECK(at::equal(at::cat({first, second}), next));
        CHECK(at::equal(parts.base(), next));
        CHECK(at::equal(parts.momentum_buffer(), whole.momentum_buffer()));
      }
    }
    // Fragments stepped at different times: each value follows its own history; the tensor
    // handed to set_base is not written.
    outer_optimizer outer({true, 0.5, 0.9, true});
    const auto base = at::ones({4});
    outer.set_base(base);
    outer.step_part(at::zeros({2}), 2);
    CHECK(at::equal(base, at::ones({4})));
    CHECK(at::equal(outer.base().narrow(0, 0, 2), at::ones({2})));
    CHECK(at::equal(outer.momentum_buffer().narrow(0, 0, 2), at::zeros({2})));
    CHECK_THROWS_AS(outer.step_part(at::zeros({3}), 2), std::invalid_argument);
    CHECK_THROWS_AS(outer_optimizer({true}).step_part(at::zeros({1}), 0), std::logic_error);
    // Under compression the base takes what the replicas hold there (the step, rounded), and
    // nothing else; a tensor handed to set_base is not written.
    outer_optimizer rounded({true, 0.5, 0.9, true});
    const auto start = at::zeros({4});
    rounded.set_base(start);
    rounded.set_base_part(at::full({2}, 3.0), 1);
    CHECK(at::equal(rounded.base(), at::tensor({0.0F, 3.0F, 3.0F, 0.0F})));
    CHECK(at::equal(start, at::zeros({4})));
    CHECK_THROWS_AS(rounded.set_base_part(at::zeros({2}), 3), std::invalid_argument);
  }

  TEST_CASE("the outer optimizer without momentum, lr 1: the average, up to rounding") {
    outer_optimizer outer({true, 1.0, 0.0, false});
    const auto base = at::randn({1000});
    const auto average = at::randn({1000});
    outer.set_base(base);
    CHECK(at::allclose(outer.step(average), average, 0, 1e-6));
    CHECK(!outer.momentum_buffer().defined());
  }

  TEST_CASE("clip_gradient by norm equals clip_grad_norm_ over several parameters") {
    // Norm about 5.5 (29 values of scale 1), and 55 for the larger scale.
    for (double scale : {1.0, 10.0}) {
      for (double limit : {0.5, 1.0, 3.0}) {
        CAPTURE(scale);
        CAPTURE(limit);
        const auto original = flat_values(scale, 11);
        auto ours = original.clone();
        clip_gradient(ours, clip_norm(limit));
        auto params = parameters_with_gradients(original);
        const double norm = torch::nn::utils::clip_grad_norm_(params, limit);
        CHECK(norm == doctest::Approx(original.norm().item<double>()).epsilon(1e-6));
        REQUIRE(norm > limit);  // the case where it scales
        CHECK(max_abs_diff(ours, flattened_gradients(params)) <= 1e-6);
        CHECK(ours.norm().item<double>() == doctest::Approx(limit).epsilon(1e-5));
      }
    }
  }

  TEST_CASE("clip_gradient by norm leaves a gradient below the limit unchanged") {
    const auto original = flat_values(1.0, 12);
    const double norm = original.norm().item<double>();
    for (double limit : {norm * 1.01, 100.0}) {
      CAPTURE(limit);
      auto ours = original.clone();
      clip_gradient(ours, clip_norm(limit));
      auto params = parameters_with_gradients(original);
      torch::nn::utils::clip_grad_norm_(params, limit);
      CHECK(max_abs_diff(ours, flattened_gradients(params)) <= 1e-6);
      CHECK(max_abs_diff(ours, original) <= 1e-7);
    }
  }

  TEST_CASE("clip_gradient by value equals clip_grad_value_") {
    const auto original = flat_values(2.0, 13);
    for (double limit : {0.1, 1.0, 1000.0}) {
      CAPTURE(limit);
      auto ours = original.clone();
      clip_gradient(ours, clip_value(limit));
      auto params = parameters_with_gradients(original);
      torch::nn::utils::clip_grad_value_(params, limit);
      CHECK(max_abs_diff(ours, flattened_gradients(params)) == 0.0);
      CHECK(ours.abs().max().item<float>() <= static_cast<float>(limit));  // float32 buffer
    }
    auto unclipped = original.clone();
    clip_gradient(unclipped, clip_value(1000.0));
    CHECK(at::equal(unclipped, original));
  }

  TEST_CASE("clip_gradient without clipping settings changes nothing") {
    const auto original = flat_values(100.0, 14);
    auto ours = original.clone();
    clip_gradient(ours, training_config{});
    CHECK(at::equal(ours, original));
  }

  TEST_CASE("clip_member_gradients clips every member's slices alone") {
    constexpr int64_t members = 3;
    const std::vector<std::vector<int64_t>> stacked_shapes{
        {members, 4, 5}, {members, 5}, {members, 2, 3, 2}};
    auto gen = at::make_generator<at::CPUGeneratorImpl>(21);
    std::vector<at::Tensor> original;
    for (const auto& s : stacked_shapes)
      original.push_back(at::randn(s, gen, at::kFloat));
    // Member 1's gradient is small: a norm limit of 1 leaves it alone and scales the others.
    for (auto& g : original)
      g.select(0, 1).mul_(0.01);
    for (const auto& training : {clip_norm(1.0), clip_norm(0.05), clip_value(0.3)}) {
      CAPTURE(training.clip_grad_norm.value_or(-1));
      CAPTURE(training.clip_grad_value.value_or(-1));
      std::vector<at::Tensor> stacked;
      for (const auto& g : original)
        stacked.push_back(g.clone());
      clip_member_gradients(stacked, training);
      for (int64_t k = 0; k < members; ++k) {
        CAPTURE(k);
        std::vector<at::Tensor> own_parts, clipped_parts;
        for (std::size_t i = 0; i < original.size(); ++i) {
          own_parts.push_back(original[i].select(0, k).reshape({-1}));
          clipped_parts.push_back(stacked[i].select(0, k).reshape({-1}));
        }
        auto alone = at::cat(own_parts);
        const auto before = alone.clone();
        clip_gradient(alone, training);
        CHECK(max_abs_diff(at::cat(clipped_parts), alone) <= 1e-6);
        if (training.clip_grad_norm && *training.clip_grad_norm == 1.0) {
          // member 1 is below the limit, the others above it
          CHECK((max_abs_diff(alone, before) == 0.0) == (k == 1));
        }
      }
    }
  }

  TEST_CASE("clip_member_gradients with one member equals clip_gradient") {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(22);
    std::vector<at::Tensor> stacked{at::randn({1, 6, 3}, gen), at::randn({1, 4}, gen)};
    auto flat = at::cat({stacked[0].reshape({-1}), stacked[1].reshape({-1})});
    clip_member_gradients(stacked, clip_norm(0.5));
    clip_gradient(flat, clip_norm(0.5));
    CHECK(max_abs_diff(at::cat({stacked[0].reshape({-1}), stacked[1].reshape({-1})}), flat) <=
          1e-7);
  }

  TEST_CASE("learning_rate: constant and step at hand-computed points") {
    const auto constant = with_schedule(lr_schedule_kind::constant);
    for (int64_t s : {0, 1, 50, 99})
      CHECK(learning_rate(constant, s, 100) == 0.1);

    auto step = with_schedule(lr_schedule_kind::step);
    step.schedule.every = 30;
    step.schedule.gamma = 0.5;
    CHECK(learning_rate(step, 0, 100) == 0.1);
    CHECK(learning_rate(step, 29, 100) == 0.1);
    CHECK(learning_rate(step, 30, 100) == doctest::Approx(0.05).epsilon(1e-12));
    CHECK(learning_rate(step, 59, 100) == doctest::Approx(0.05).epsilon(1e-12));
    CHECK(learning_rate(step, 60, 100) == doctest::Approx(0.025).epsilon(1e-12));
    CHECK(learning_rate(step, 99, 100) == doctest::Approx(0.0125).epsilon(1e-12));
    CHECK(learning_rate_factor(step, 60, 100) == doctest::Approx(0.25).epsilon(1e-12));
  }

  TEST_CASE("learning_rate: cosine starts at lr, is (lr + min) / 2 half-way, nears min") {
    auto cosine = with_schedule(lr_schedule_kind::cosine);
    cosine.schedule.min_lr = 0.001;
    CHECK(learning_rate(cosine, 0, 100) == doctest::Approx(0.1).epsilon(1e-12));
    CHECK(learning_rate(cosine, 50, 100) == doctest::Approx((0.1 + 0.001) / 2).epsilon(1e-12));
    CHECK(learning_rate(cosine, 25, 100) ==
          doctest::Approx(0.001 + 0.099 * (1 + std::cos(pi / 4)) / 2).epsilon(1e-12));
    // Step 100 (one past the last) would be min_lr itself; the last step is just above it.
    CHECK(learning_rate(cosine, 99, 100) > 0.001);
    CHECK(learning_rate(cosine, 99, 100) < 0.0011);
    CHECK(learning_rate_factor(cosine, 50, 100) == doctest::Approx(0.505).epsilon(1e-12));
  }

  TEST_CASE("learning_rate: a warm-up rises linearly from lr x start_factor, then the schedule") {
    auto cosine = with_schedule(lr_schedule_kind::cosine);
    cosine.schedule.min_lr = 0.001;
    cosine.schedule.warmup_steps = 10;
    cosine.schedule.warmup_start_factor = 0.2;
    // The first step is lr x start_factor; half-way through, half-way between; then lr.
    CHECK(learning_rate(cosine, 0, 110) == doctest::Approx(0.02).epsilon(1e-12));
    CHECK(learning_rate(cosine, 5, 110) == doctest::Approx(0.06).epsilon(1e-12));
    CHECK(learning_rate(cosine, 9, 110) == doctest::Approx(0.092).epsilon(1e-12));
    CHECK(learning_rate(cosine, 10, 110) == doctest::Approx(0.1).epsilon(1e-12));
    // The cosine runs over the 100 steps after the warm-up: half-way at step 60.
    CHECK(learning_rate(cosine, 60, 110) == doctest::Approx((0.1 + 0.001) / 2).epsilon(1e-12));

    auto step = with_schedule(lr_schedule_kind::step);
    step.schedule.every = 20;
    step.schedule.gamma = 0.1;
    step.schedule.warmup_steps = 5;
    step.schedule.warmup_start_factor = 0.1;
    CHECK(learning_rate(step, 0, 100) == doctest::Approx(0.01).epsilon(1e-12));
    CHECK(learning_rate(step, 5, 100) == doctest::Approx(0.1).epsilon(1e-12));
    CHECK(learning_rate(step, 24, 100) == doctest::Approx(0.1).epsilon(1e-12));
    CHECK(learning_rate(step, 25, 100) == doctest::Approx(0.01).epsilon(1e-12));
  }

  TEST_CASE("learning_rate: one_cycle rises from lr / div to lr, falls to that / final_div") {
    auto cycle = with_schedule(lr_schedule_kind::one_cycle);
    cycle.schedule.warmup_steps = 7;  // one_cycle has its own rise: a warm-up is not used
    CHECK(learning_rate(cycle, 0, 100) == doctest::Approx(0.1 / 25).epsilon(1e-12));
    // The peak is at step pct_start x T - 1 = 29.
    CHECK(learning_rate(cycle, 29, 100) == doctest::Approx(0.1).epsilon(1e-12));
    CHECK(learning_rate(cycle, 28, 100) < 0.1);
    CHECK(learning_rate(cycle, 30, 100) < 0.1);
    // Half-way up (step 14.5 of 29) is hard to hit; the last step is the floor exactly.
    CHECK(learning_rate(cycle, 99, 100) == doctest::Approx(0.1 / 25 / 1e4).epsilon(1e-12));
    // Half-way down: steps 29 .. 99, so step 64 is the cosine's middle.
    CHECK(learning_rate(cycle, 64, 100) ==
          doctest::Approx((0.1 + 0.1 / 25 / 1e4) / 2).epsilon(1e-12));
    // pct_start x T = 1 puts the peak at step 0 (PyTorch divides by zero there): it starts at
    // lr, never at a NaN, and falls; so does a one-step run with pct_start 1.
    cycle.schedule.pct_start = 0.1;
    CHECK(learning_rate(cycle, 0, 10) == doctest::Approx(0.1).epsilon(1e-12));
    CHECK(learning_rate(cycle, 9, 10) == doctest::Approx(0.1 / 25 / 1e4).epsilon(1e-12));
    for (int64_t step = 0; step < 10; ++step)
      CHECK(std::isfinite(learning_rate(cycle, step, 10)));
    cycle.schedule.pct_start = 1;
    CHECK(learning_rate(cycle, 0, 1) == doctest::Approx(0.1).epsilon(1e-12));
    // A peak before step 0 (pct_start x T < 1): below lr at once, as OneCycleLR has it.
    cycle.schedule.pct_start = 0.3;
    CHECK(learning_rate(cycle, 0, 3) == doctest::Approx(0.0994).epsilon(1e-3));
  }

  TEST_CASE("describe_schedule names the schedule, the warm-up and the last step's rate") {
    CHECK(describe_schedule(with_schedule(lr_schedule_kind::constant), 100) ==
          "constant (last step 0.1)");

    auto step = with_schedule(lr_schedule_kind::step);
    step.schedule.every = 30;
    step.schedule.gamma = 0.1;
    CHECK(describe_schedule(step, 100) == "x0.1 every 30 steps (last step 0.0001)");

    auto cosine = with_schedule(lr_schedule_kind::cosine);
    cosine.schedule.min_lr = 0.001;
    CHECK(describe_schedule(cosine, 100) == "cosine to 0.001 (last step 0.00102443)");
    cosine.schedule.warmup_steps = 10;
    CHECK(describe_schedule(cosine, 110) ==
          "cosine to 0.001, after 10 warm-up steps from 0.01 (last step 0.00102443)");

    auto cycle = with_schedule(lr_schedule_kind::one_cycle);
    CHECK(describe_schedule(cycle, 100) ==
          "one cycle: 0.004 up to 0.1 over 30 steps, down to 4e-07 (last step 4e-07)");
    // Too few steps for a rise: what the first step takes.
    CHECK(describe_schedule(cycle, 3) ==
          "one cycle: no rise (pct_start x steps <= 1), from 0.0994415, down to 4e-07 (last step "
          "4e-07)");
  }
}
