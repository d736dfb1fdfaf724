// Benchmark: one optimizer step over a built-in network's parameters, LibTorch's own
// (torch::optim, one parameter at a time: what troupe used before) against troupe's fused step
// over the flat buffers (core/optim/flat_optimizer), side by side in one run. Two copies of the
// network start from the same weights and step on the same fixed gradient, alternately, for
// `--rounds` rounds of `--steps` steps each; it prints the median microseconds per step of each,
// their ratio, and the largest difference between the two copies' weights at the end. The fused
// step's arithmetic is LibTorch's, element for element, but where one contracts a multiply and
// an add and the other does not they round differently, and on one fixed gradient they do so the
// same way every step: Adam's second-moment average (beta2 0.999, about a thousand steps of
// memory) then drifts by some 1e-4 relative, and the copies part by about 3e-5 after 1,000 steps
// and 5e-4 after 5,000. On varying gradients they stay under 1e-6 (tests/core/test_flat_adam.cpp:
// 100 steps).
//
//   optimizer_step_bench [--model mlp|cnn] [--optimizer sgd|adam] [--steps 2000] [--rounds 5]
//                        [--threads 1]
#include "bench/bench_models.hpp"
#include "bench/median.hpp"
#include "core/model/flat_parameters.hpp"
#include "core/model/network.hpp"
#include "core/optim/flat_optimizer.hpp"
#include "core/optim/make_optimizer.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <vector>

using namespace troupe;

namespace {

using bench::median;

// Microseconds per call of `step`, over `steps` calls.
template <class Step>
double time_steps(int steps, Step&& step) {
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < steps; ++i)
    step();
  const std::chrono::duration<double, std::micro> took = std::chrono::steady_clock::now() - start;
  return took.count() / steps;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"troupe's fused optimizer step against LibTorch's"};
  std::string model = "mlp";
  std::string optimizer = "sgd";
  int steps = 2000;
  int rounds = 5;
  int threads = 1;
  app.add_option("--model", model, "mlp (784-256-128-10) or cnn (configs/fashion_cnn_sync.json)")
      ->check(CLI::IsMember({"mlp", "cnn"}));
  app.add_option("--optimizer", optimizer, "sgd (momentum 0.9) or adam")
      ->check(CLI::IsMember({"sgd", "adam"}));
  app.add_option("--steps", steps, "steps per round")->check(CLI::Range(1, 1000000));
  app.add_option("--rounds", rounds, "rounds, alternating the two")->check(CLI::Range(1, 1000));
  app.add_option("--threads", threads, "intra-op threads")->check(CLI::Range(1, 64));
  CLI11_PARSE(app, argc, argv);
  at::set_num_threads(threads);

  optimizer_config config;
  config.kind = optimizer == "adam" ? optimizer_kind::adam : optimizer_kind::sgd;
  config.lr = optimizer == "adam" ? 1e-3 : 0.02;
  config.momentum = 0.9;

  at::manual_seed(1);
  network theirs(bench::bench_model(model), 10);
  network ours(bench::bench_model(model), 10);
  flat_parameters their_flat(theirs.named_parameters(), theirs.named_buffers());
  flat_parameters our_flat(ours.named_parameters(), ours.named_buffers());
  {
    at::NoGradGuard no_grad;
    our_flat.weights().copy_(their_flat.weights());
    const auto gradient = at::randn({their_flat.size()}) * 1e-3;
    their_flat.grads().copy_(gradient);
    our_flat.grads().copy_(gradient);
  }
  auto libtorch = make_optimizer(config, theirs.parameters());
  flat_optimizer fused(config, our_flat, ours.parameters());

  std::vector<double> libtorch_us, fused_us;
  for (int r = 0; r < rounds; ++r) {
    libtorch_us.push_back(time_steps(steps, [&] { libtorch->step(); }));
    fused_us.push_back(time_steps(steps, [&] { fused.step(config.lr); }));
  }
  const double difference = (their_flat.weights() - our_flat.weights()).abs().max().item<double>();
  const double libtorch_median = median(libtorch_us);
  const double fused_median = median(fused_us);
  nlohmann::json out{{"model", model},
                     {"optimizer", optimizer},
                     {"parameters", our_flat.parameter_count()},
                     {"threads", threads},
                     {"steps_per_round", steps},
                     {"libtorch_us", libtorch_median},
                     {"fused_us", fused_median},
                     {"libtorch_us_rounds", libtorch_us},
                     {"fused_us_rounds", fused_us},
                     {"fused_speedup", libtorch_median / fused_median},
                     {"max_weight_difference", difference}};
  std::cout << out.dump() << "\n";
  return 0;
}
