// flat_rmsprop (core/optim/flat_rmsprop.hpp) against LibTorch's RMSprop, which does what
// PyTorch's torch.optim.RMSprop does, with every combination of weight decay, momentum and
// `centered`, a rate that changes every step, a buffer large enough to split over the threads,
// and through flat_optimizer as a job configures it.
#include "core/optim/flat_optimizer.hpp"
#include "core/optim/flat_rmsprop.hpp"
#include "core/optim/make_optimizer.hpp"
#include "flat_models.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <torch/optim/rmsprop.h>

#include <cmath>
#include <string>

using namespace troupe;
using namespace troupe::testing;

namespace {

torch::optim::RMSpropOptions rmsprop_options(double decay, double momentum, bool centered) {
  return torch::optim::RMSpropOptions(1e-2)
      .alpha(0.99)
      .eps(1e-8)
      .weight_decay(decay)
      .momentum(momentum)
      .centered(centered);
}

double rmsprop_side_by_side(const torch::optim::RMSpropOptions& options, int steps,
                            const shape_list& layout = shapes) {
  return rated_side_by_side<torch::optim::RMSprop, flat_rmsprop>(options, steps, layout);
}

}  // namespace

TEST_SUITE("optim") {
  TEST_CASE("flat_rmsprop steps as LibTorch's RMSprop does, in every combination") {
    for (const double decay : {0.0, 0.01})
      for (const double momentum : {0.0, 0.9})
        for (const bool centered : {false, true}) {
          CAPTURE(decay);
          CAPTURE(momentum);
          CAPTURE(centered);
          // Momentum carries ATen's fused multiply-adds' last-bit differences from step to
          // step (core/optim/flat_rmsprop.hpp): 1.7e-6 at most over these 100.
          CHECK(rmsprop_side_by_side(rmsprop_options(decay, momentum, centered), 100) <
                (momentum > 0 ? 2e-6 : 1e-6));
        }
    CHECK(rmsprop_side_by_side(rmsprop_options(0.01, 0.9, true), 3, large_shapes) < 1e-6);
  }

  TEST_CASE("rmsprop through flat_optimizer, saved and loaded mid-run, as LibTorch's") {
    const auto initial = random_flat(9, 1.0);
    optimizer_config config;
    config.kind = optimizer_kind::rmsprop;
    config.lr = 1e-2;
    config.momentum = 0.9;
    config.centered = true;
    config.weight_decay = 0.01;
    CHECK(config.state_buffers() == 3);
    torch_model mine(initial);
    named_tensors named;
    for (std::size_t i = 0; i < mine.params.size(); ++i)
      named.emplace_back("p" + std::to_string(i), mine.params[i]);
    flat_parameters buffers(named, {});
    auto optimizer = std::make_unique<flat_optimizer>(config, buffers, mine.params);
    for (int s = 0; s < 20; ++s) {
      if (s == 10) {  // a checkpoint's round trip into a fresh optimizer changes nothing
        const auto bytes = optimizer->save();
        optimizer = std::make_unique<flat_optimizer>(config, buffers, mine.params);
        optimizer->load(bytes);
      }
      buffers.parameter_grads().copy_(random_flat(700 + s, 0.1));
      optimizer->step(changing_rate(s));
    }
    torch_model theirs(initial);
    torch::optim::RMSprop reference(theirs.params, rmsprop_options(0.01, 0.9, true));
    for (int s = 0; s < 20; ++s) {
      theirs.set_grads(random_flat(700 + s, 0.1));
      set_learning_rate(reference, changing_rate(s));
      reference.step();
    }
    CHECK(max_abs_diff(buffers.weights().narrow(0, 0, buffers.parameter_count()), theirs.flat()) <
          2e-6);
  }
}
