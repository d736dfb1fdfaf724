// Shows how to use troupe as a library: build a job in code, train it with the embedded actor
// system (one run driver, two synchronous replica actors), and read the report. The data is
// troupe's synthetic set (ten noisy class prototypes); examples/own_data.cpp trains on tensors
// of your own and saves the weights.
//
//   ./build/examples/embed_run
//
// Expected output (figures vary a little with the machine):
//   step 50/200 loss 0.2...
//   step 100/200 loss 0.0...
//   evaluation after step 100: test loss 0.1..., test accuracy 0.96...
//   ...
//   succeeded: 200 steps, final train loss 0.00..., test accuracy 0.96..., 2 replicas, 25450
//   weights
#include "actors/run_job.hpp"
#include "core/data/synthetic.hpp"

#include <cstdio>

int main() {
  troupe::job_config job;
  job.name = "embedded";
  job.seed = 11;
  job.model.hidden = {32};
  job.data.kind = troupe::data_kind::synthetic;
  // At the default noise (1) the prototypes are so far apart that the loss is 0.0000 within 50
  // steps; at 6 there is something to learn.
  job.data.noise = 6;
  job.optimizer.lr = 0.005;
  job.optimizer.momentum = 0.9;
  job.training.epochs = 0;
  job.training.steps = 200;
  job.training.batch_size = 64;
  job.training.eval_interval = 100;
  job.parallelism.replicas = 2;

  auto data = std::make_shared<const troupe::dataset>(troupe::make_synthetic(
      job.data.train_samples, job.data.test_samples, job.data.noise, job.seed));
  troupe::run_options options;
  // Called after every step and again after every evaluation (p.evaluation), with the same step:
  // a step's line is printed once, from its step update.
  options.on_progress = [](const troupe::progress_update& p) {
    if (p.evaluation)
      std::printf("evaluation after step %ld: test accuracy %.4f\n", static_cast<long>(p.step),
                  p.accuracy.value_or(0));
    else if (p.step % 50 == 0)
      std::printf("step %ld/%ld loss %.4f\n", static_cast<long>(p.step),
                  static_cast<long>(p.total_steps), p.loss);
  };
  const auto report = troupe::plan_and_run(job, data, options);
  if (!report.succeeded()) {
    std::fprintf(stderr, "failed: %s\n", report.error.c_str());
    return 1;
  }
  std::printf(
      "succeeded: %ld steps, final train loss %.4f, test accuracy %.4f, %ld replicas, %ld "
      "weights\n",
      static_cast<long>(report.steps), report.final_train_loss.value_or(-1),
      report.test_accuracy.value_or(0), static_cast<long>(report.replicas),
      static_cast<long>(report.final_weights.numel()));
  return 0;
}
