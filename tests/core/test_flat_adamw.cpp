// flat_adamw (core/optim/flat_adam.hpp) against LibTorch's AdamW, which does what PyTorch's
// torch.optim.AdamW does: decoupled weight decay, with a rate that changes every step, over a
// buffer large enough to split over the threads, and through flat_optimizer as a job configures
// it. Adam with the same weight decay must come out different (the decay enters its moments).
#include "core/optim/flat_adam.hpp"
#include "core/optim/flat_optimizer.hpp"
#include "core/optim/make_optimizer.hpp"
#include "flat_models.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <torch/optim/adamw.h>

#include <cmath>
#include <string>

using namespace troupe;
using namespace troupe::testing;

namespace {

torch::optim::AdamWOptions adamw_options(double decay) {
  return torch::optim::AdamWOptions(1e-2).betas({0.9, 0.999}).eps(1e-8).weight_decay(decay);
}

double adamw_side_by_side(double decay, int steps, const shape_list& layout = shapes) {
  return rated_side_by_side<torch::optim::AdamW, flat_adamw>(adamw_options(decay), steps, layout);
}

}  // namespace

TEST_SUITE("optim") {
  TEST_CASE("flat_adamw steps as LibTorch's AdamW does, the decay decoupled") {
    for (const double decay : {0.0, 0.01, 0.1}) {
      CAPTURE(decay);
      CHECK(adamw_side_by_side(decay, 100) < 1e-6);
    }
#ifndef __SANITIZE_THREAD__  // TSan builds leave OpenMP out (core/CMakeLists.txt)
    REQUIRE(flat_adamw::splits_over_threads());
#endif
    CHECK(adamw_side_by_side(0.01, 3, large_shapes) < 1e-6);
  }

  TEST_CASE("adamw through flat_optimizer: LibTorch's AdamW step, unlike Adam's with decay") {
    const auto initial = random_flat(9, 1.0);
    const auto train = [&](optimizer_kind kind) {
      optimizer_config config;
      config.kind = kind;
      config.lr = 1e-2;
      config.weight_decay = 0.1;
      torch_model mine(initial);
      named_tensors named;
      for (std::size_t i = 0; i < mine.params.size(); ++i)
        named.emplace_back("p" + std::to_string(i), mine.params[i]);
      flat_parameters buffers(named, {});
      flat_optimizer optimizer(config, buffers, mine.params);
      for (int s = 0; s < 20; ++s) {
        buffers.parameter_grads().copy_(random_flat(700 + s, 0.1));
        optimizer.step(changing_rate(s));
      }
      return buffers.weights().narrow(0, 0, buffers.parameter_count()).clone();
    };
    const auto adamw = train(optimizer_kind::adamw);
    torch_model theirs(initial);
    torch::optim::AdamW reference(theirs.params, adamw_options(0.1));
    for (int s = 0; s < 20; ++s) {
      theirs.set_grads(random_flat(700 + s, 0.1));
      set_learning_rate(reference, changing_rate(s));
      reference.step();
    }
    CHECK(max_abs_diff(adamw, theirs.flat()) < 1e-6);
    CHECK(max_abs_diff(adamw, train(optimizer_kind::adam)) > 1e-4);
  }
}
