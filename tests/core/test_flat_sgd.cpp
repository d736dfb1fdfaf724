// flat_sgd against LibTorch's SGD step (momentum, dampening, weight decay, Nesterov), its state
// as the optimizer's own (checkpoint bytes, a restored state, one restored only in part), and
// a resumed run continuing bit for bit.
#include "core/optim/flat_sgd.hpp"
#include "core/optim/make_optimizer.hpp"
#include "core/optim/optimizer_state_key.hpp"
#include "flat_models.hpp"

#include <ATen/ATen.h>
#include <doctest/doctest.h>
#include <torch/optim/sgd.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

using namespace troupe;
using namespace troupe::testing;

namespace {

torch::optim::SGDOptions sgd_options(double momentum, double dampening, double decay,
                                     bool nesterov) {
  return torch::optim::SGDOptions(0.05)
      .momentum(momentum)
      .dampening(dampening)
      .weight_decay(decay)
      .nesterov(nesterov);
}

// `steps` steps of both, on the same gradients; returns the largest difference in the weights.
double sgd_side_by_side(const torch::optim::SGDOptions& options, int steps,
                        const shape_list& layout = shapes) {
  const auto initial = random_flat(1, 1.0, layout);
  flat_model flat(initial, layout);
  torch_model reference(initial, layout);
  torch::optim::SGD flat_optimizer(flat.params, options);
  torch::optim::SGD reference_optimizer(reference.params, options);
  flat_sgd fused(flat_optimizer, flat.params);
  double worst = 0;
  for (int s = 0; s < steps; ++s) {
    const auto g = random_flat(100 + s, 0.1, layout);
    flat.grads.copy_(g);
    reference.set_grads(g);
    const double lr = 0.05 / (1 + s);  // a schedule: the options' rate as it is at each step
    set_learning_rate(flat_optimizer, lr);
    set_learning_rate(reference_optimizer, lr);
    fused.step(flat.weights, flat.grads);
    reference_optimizer.step();
    worst = std::max(worst, max_abs_diff(flat.weights, reference.flat()));
  }
  return worst;
}

}  // namespace

TEST_SUITE("optim") {
  TEST_CASE("flat_sgd steps as LibTorch's SGD does, whatever the options") {
    struct variant {
      const char* name;
      torch::optim::SGDOptions options;
    };
    const std::vector<variant> variants{
        {"plain", sgd_options(0, 0, 0, false)},
        {"weight decay", sgd_options(0, 0, 1e-2, false)},
        {"momentum", sgd_options(0.9, 0, 0, false)},
        {"momentum, dampening", sgd_options(0.9, 0.1, 0, false)},
        {"momentum, weight decay", sgd_options(0.9, 0, 5e-3, false)},
        {"nesterov, weight decay", sgd_options(0.9, 0, 5e-3, true)},
    };
    for (const auto& v : variants) {
      const std::string name = v.name;
      CAPTURE(name);
      // Float32 rounding only: ATen contracts some multiply-adds that the fused pass does not.
      CHECK(sgd_side_by_side(v.options, 100) < 1e-6);
    }
  }

  TEST_CASE("flat_sgd splits a large buffer over the intra-op threads, with the same result") {
#ifndef __SANITIZE_THREAD__  // TSan builds leave OpenMP out (core/CMakeLists.txt)
    REQUIRE(flat_sgd::splits_over_threads());
#endif
    CHECK(sgd_side_by_side(sgd_options(0.9, 0, 5e-3, true), 3, large_shapes) < 1e-6);
  }

  TEST_CASE("flat_sgd's momentum buffers are the optimizer's state, in LibTorch's layout") {
    const auto options = sgd_options(0.9, 0, 1e-3, false);
    const auto initial = random_flat(2, 1.0);
    flat_model flat(initial);
    torch_model reference(initial);
    torch::optim::SGD flat_optimizer(flat.params, options);
    torch::optim::SGD reference_optimizer(reference.params, options);
    flat_sgd fused(flat_optimizer, flat.params);
    for (int s = 0; s < 5; ++s) {
      const auto g = random_flat(200 + s, 0.1);
      flat.grads.copy_(g);
      reference.set_grads(g);
      fused.step(flat.weights, flat.grads);
      reference_optimizer.step();
    }
    // The checkpoint bytes of one load into the other: same parameters, same shapes.
    torch::optim::SGD loaded(torch_model(initial).params, options);
    load_optimizer(loaded, save_optimizer(flat_optimizer));
    REQUIRE(loaded.state().size() == shapes.size());
    for (std::size_t i = 0; i < shapes.size(); ++i) {
      const auto key = [](const torch::optim::SGD& o, const at::Tensor& p) {
        return o.state().at(optimizer_state_key_of(o, p)).get();
      };
      const auto& mine =
          static_cast<torch::optim::SGDParamState&>(*key(flat_optimizer, flat.params[i]));
      const auto& theirs =
          static_cast<torch::optim::SGDParamState&>(*key(reference_optimizer, reference.params[i]));
      CHECK(mine.momentum_buffer().sizes() == theirs.momentum_buffer().sizes());
      CHECK(max_abs_diff(mine.momentum_buffer(), theirs.momentum_buffer()) < 1e-6);
    }
  }

  TEST_CASE("flat_sgd continues a restored state bit for bit, and one restored in part") {
    const auto options = sgd_options(0.9, 0, 0, true);
    const auto initial = random_flat(3, 1.0);
    flat_model whole(initial);
    torch::optim::SGD whole_optimizer(whole.params, options);
    flat_sgd whole_fused(whole_optimizer, whole.params);
    auto step = [](flat_sgd& fused, flat_model& m, int s) {
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
      torch::optim::SGD resumed_optimizer(resumed.params, options);
      flat_sgd resumed_fused(resumed_optimizer, resumed.params);
      load_optimizer(resumed_optimizer, state_at_4);
      resumed_fused.adopt_state();
      for (int s = 4; s < 8; ++s)
        step(resumed_fused, resumed, s);
      CHECK(at::equal(resumed.weights, whole.weights));
    }
    SUBCASE("in part: a parameter LibTorch never stepped has no buffer yet") {
      // LibTorch skips a parameter without a gradient, and files no state for it.
      torch_model partial(initial);
      torch::optim::SGD partial_optimizer(partial.params, options);
      partial.set_grads(random_flat(400, 0.1));
      partial.params[2].mutable_grad() = at::Tensor();
      partial_optimizer.step();
      REQUIRE(partial_optimizer.state().size() == shapes.size() - 1);
      const auto state = save_optimizer(partial_optimizer);

      flat_model flat(partial.flat());
      torch::optim::SGD flat_optimizer(flat.params, options);
      flat_sgd fused(flat_optimizer, flat.params);
      load_optimizer(flat_optimizer, state);
      fused.adopt_state();
      torch::optim::SGD reference_optimizer(partial.params, options);
      load_optimizer(reference_optimizer, state);
      for (int s = 0; s < 3; ++s) {
        const auto g = random_flat(500 + s, 0.1);
        flat.grads.copy_(g);
        partial.set_grads(g);
        fused.step(flat.weights, flat.grads);
        reference_optimizer.step();
      }
      CHECK(max_abs_diff(flat.weights, partial.flat()) < 1e-6);
      CHECK(flat_optimizer.state().size() == shapes.size());
    }
  }

  TEST_CASE("flat_sgd refuses a restored momentum buffer of the wrong size, and steps afresh") {
    flat_model m(random_flat(6, 1.0));
    torch::optim::SGD optimizer(m.params, sgd_options(0.9, 0, 0, false));
    flat_sgd fused(optimizer, m.params);
    // What LibTorch's own archive format can carry: it checks no shapes when it loads.
    auto wrong = std::make_unique<torch::optim::SGDParamState>();
    wrong->momentum_buffer(at::ones({3}));
    file_optimizer_state(optimizer, m.params[1], std::move(wrong));
    try {
      fused.adopt_state();
      FAIL("a 3-value momentum buffer for a 17-value parameter was adopted");
    } catch (const std::runtime_error& e) {
      CHECK(std::string(e.what()) ==
            "optimizer state does not load: parameter 1's momentum buffer has 3 values of type "
            "Float; the parameter has 17 of type Float");
    }
    m.grads.copy_(random_flat(7, 0.1));
    fused.step(m.weights, m.grads);  // every buffer fresh: the first step's
    CHECK(find_optimizer_state<torch::optim::SGDParamState>(optimizer, m.params[1])
              ->momentum_buffer()
              .sizes() == m.params[1].sizes());
  }

  TEST_CASE("flat_sgd refuses buffers that are not the parameters' flat layout") {
    flat_model m(random_flat(4, 1.0));
    torch::optim::SGD optimizer(m.params, sgd_options(0.9, 0, 0, false));
    flat_sgd fused(optimizer, m.params);
    CHECK_THROWS_AS(fused.step(m.weights.narrow(0, 1, total_elements() - 1),
                               m.grads.narrow(0, 1, total_elements() - 1)),
                    c10::Error);
    CHECK_THROWS_AS(fused.step(m.weights.to(at::kDouble), m.grads), c10::Error);
    CHECK(optimizer.state().empty());  // nothing was stepped
  }
}
