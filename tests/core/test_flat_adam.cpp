// flat_adam against LibTorch's Adam step (betas, eps, weight decay, a learning-rate schedule),
// its state as the optimizer's own (checkpoint bytes, step counts), a resumed run continuing bit
// for bit, a state restored in part (step counts that differ), and AMSGrad left to LibTorch.
#include "core/optim/flat_adam.hpp"
#include "core/optim/make_optimizer.hpp"
#include "core/optim/optimizer_state_key.hpp"
#include "flat_models.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <torch/optim/adam.h>

#include <string>
#include <vector>

using namespace troupe;
using namespace troupe::testing;

namespace {

torch::optim::AdamOptions adam_options(double beta1, double beta2, double eps, double decay) {
  return torch::optim::AdamOptions(1e-2).betas({beta1, beta2}).eps(eps).weight_decay(decay);
}

const torch::optim::AdamParamState& state_of(const torch::optim::Adam& optimizer,
                                             const at::Tensor& param) {
  return static_cast<const torch::optim::AdamParamState&>(
      *optimizer.state().at(optimizer_state_key_of(optimizer, param)));
}

// Steps both on the same gradients from step `first` on; the largest difference in the weights.
double step_side_by_side(flat_adam& fused, flat_model& flat, torch::optim::Adam& reference,
                         torch_model& theirs, int first, int steps,
                         const shape_list& layout = shapes) {
  double worst = 0;
  for (int s = first; s < first + steps; ++s) {
    const auto g = random_flat(100 + s, 0.1, layout);
    flat.grads.copy_(g);
    theirs.set_grads(g);
    fused.step(flat.weights, flat.grads);
    reference.step();
    worst = std::max(worst, max_abs_diff(flat.weights, theirs.flat()));
  }
  return worst;
}

double adam_side_by_side(const torch::optim::AdamOptions& options, int steps,
                         const shape_list& layout = shapes) {
  const auto initial = random_flat(1, 1.0, layout);
  flat_model flat(initial, layout);
  torch_model theirs(initial, layout);
  torch::optim::Adam flat_optimizer(flat.params, options);
  torch::optim::Adam reference(theirs.params, options);
  flat_adam fused(flat_optimizer, flat.params);
  return step_side_by_side(fused, flat, reference, theirs, 0, steps, layout);
}

}  // namespace

TEST_SUITE("optim") {
  TEST_CASE("flat_adam steps as LibTorch's Adam does, whatever the options") {
    struct variant {
      const char* name;
      torch::optim::AdamOptions options;
    };
    const std::vector<variant> variants{
        {"default", adam_options(0.9, 0.999, 1e-8, 0)},
        {"weight decay", adam_options(0.9, 0.999, 1e-8, 1e-2)},
        {"other betas and eps", adam_options(0.8, 0.99, 1e-4, 0)},
    };
    for (const auto& v : variants) {
      const std::string name = v.name;
      CAPTURE(name);
      // Float32 rounding only: ATen contracts some multiply-adds that the fused pass does not.
      CHECK(adam_side_by_side(v.options, 100) < 1e-6);
    }
  }

  TEST_CASE("flat_adam splits a large buffer over the intra-op threads, with the same result") {
#ifndef __SANITIZE_THREAD__  // TSan builds leave OpenMP out (core/CMakeLists.txt)
    REQUIRE(flat_adam::splits_over_threads());
#endif
    // Without weight decay: among 4 million elements some gradient plus decay nearly cancels,
    // and there a last-bit difference in the sum (ATen contracts it, this pass does not) moves
    // Adam's normalized step by up to 1e-5.
    CHECK(adam_side_by_side(adam_options(0.9, 0.999, 1e-8, 0), 3, large_shapes) < 1e-6);
  }

  TEST_CASE("flat_adam's averages and step counts are the optimizer's state") {
    const auto options = adam_options(0.9, 0.999, 1e-8, 0);
    const auto initial = random_flat(2, 1.0);
    flat_model flat(initial);
    torch_model theirs(initial);
    torch::optim::Adam flat_optimizer(flat.params, options);
    torch::optim::Adam reference(theirs.params, options);
    flat_adam fused(flat_optimizer, flat.params);
    step_side_by_side(fused, flat, reference, theirs, 0, 5);
    torch_model loaded_params(initial);
    torch::optim::Adam loaded(loaded_params.params, options);
    load_optimizer(loaded, save_optimizer(flat_optimizer));
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto& mine = state_of(loaded, loaded_params.params[i]);
      const auto& expected = state_of(reference, theirs.params[i]);
      CHECK(mine.step() == 5);
      CHECK(mine.exp_avg().sizes() == expected.exp_avg().sizes());
      CHECK(max_abs_diff(mine.exp_avg(), expected.exp_avg()) < 1e-7);
      CHECK(max_abs_diff(mine.exp_avg_sq(), expected.exp_avg_sq()) < 1e-7);
    }
  }

  TEST_CASE("flat_adam continues a restored state bit for bit, and one restored in part") {
    const auto options = adam_options(0.9, 0.999, 1e-8, 1e-3);
    const auto initial = random_flat(3, 1.0);
    flat_model whole(initial);
    torch::optim::Adam whole_optimizer(whole.params, options);
    flat_adam whole_fused(whole_optimizer, whole.params);
    auto step = [](flat_adam& fused, flat_model& m, int s) {
      m.grads.copy_(random_flat(300 + s, 0.1));
      fused.step(m.weights, m.grads);
    };
    for (int s = 0; s < 4; ++s)
      step(whole_fused, whole, s);
    const auto weights_at_4 = whole.weights.clone();
    const auto state_at_4 = save_optimizer(whole_optimizer);
    for (int s = 4; s < 8; ++s)
      step(whole_fused, whole, s);

    SUBCASE("whole") {
      flat_model resumed(weights_at_4);
      torch::optim::Adam resumed_optimizer(resumed.params, options);
      flat_adam resumed_fused(resumed_optimizer, resumed.params);
      load_optimizer(resumed_optimizer, state_at_4);
      resumed_fused.adopt_state();
      for (int s = 4; s < 8; ++s)
        step(resumed_fused, resumed, s);
      CHECK(at::equal(resumed.weights, whole.weights));
    }
    SUBCASE("in part: parameters at different step counts") {
      // LibTorch skips a parameter without a gradient: after two steps, one of which had no
      // gradient for parameter 2 and none for parameter 4, the counts are 2, 2, 1, 2, 0.
      torch_model theirs(initial);
      torch::optim::Adam reference(theirs.params, options);
      theirs.set_grads(random_flat(400, 0.1));
      theirs.params[4].mutable_grad() = at::Tensor();
      reference.step();
      theirs.set_grads(random_flat(401, 0.1));
      theirs.params[2].mutable_grad() = at::Tensor();
      theirs.params[4].mutable_grad() = at::Tensor();
      reference.step();
      const auto state = save_optimizer(reference);

      flat_model flat(theirs.flat());
      torch::optim::Adam flat_optimizer(flat.params, options);
      flat_adam fused(flat_optimizer, flat.params);
      load_optimizer(flat_optimizer, state);
      fused.adopt_state();
      CHECK(step_side_by_side(fused, flat, reference, theirs, 10, 3) < 1e-6);
      for (std::size_t i = 0; i < shapes.size(); ++i)
        CHECK(state_of(flat_optimizer, flat.params[i]).step() ==
              state_of(reference, theirs.params[i]).step());
      CHECK(state_of(flat_optimizer, flat.params[4]).step() == 3);
    }
  }

  TEST_CASE("flat_adam leaves AMSGrad to LibTorch's step") {
    auto options = adam_options(0.9, 0.999, 1e-8, 0);
    options.amsgrad(true);
    const auto initial = random_flat(5, 1.0);
    flat_model flat(initial);
    torch_model theirs(initial);
    torch::optim::Adam flat_optimizer(flat.params, options);
    torch::optim::Adam reference(theirs.params, options);
    flat_adam fused(flat_optimizer, flat.params);
    CHECK(step_side_by_side(fused, flat, reference, theirs, 0, 5) == 0.0);
  }

  TEST_CASE("flat_adam refuses buffers that are not the parameters' flat layout") {
    flat_model m(random_flat(4, 1.0));
    torch::optim::Adam optimizer(m.params, adam_options(0.9, 0.999, 1e-8, 0));
    flat_adam fused(optimizer, m.params);
    CHECK_THROWS_AS(fused.step(m.weights.narrow(0, 1, total_elements() - 1),
                               m.grads.narrow(0, 1, total_elements() - 1)),
                    c10::Error);
    CHECK(optimizer.state().empty());
  }
}
