// Shows how to use troupe as a library: build a job in code, train it with the embedded actor
// system (one run driver, two synchronous replica actors), and read the report.
//
//   ./build/examples/embed_run
//
// Expected output (figures vary a little with the machine):
//   step 50/200 loss 0.35 ...
//   succeeded: 200 steps, test accuracy 0.99, 2 replicas, weights of 25450 floats
#include "actors/run_job.hpp"
#include "core/data/synthetic.hpp"

#include <cstdio>

int main() {
  troupe::job_config job;
  job.name = "embedded";
  job.seed = 11;
  job.model.hidden = {32};
  job.data.kind = troupe::data_kind::synthetic;
  job.optimizer.lr = 0.05;
  job.optimizer.momentum = 0.9;
  job.training.epochs = 0;
  job.training.steps = 200;
  job.training.batch_size = 64;
  job.training.eval_interval = 100;
  job.parallelism.replicas = 2;

  auto data = std::make_shared<const troupe::dataset>(troupe::make_synthetic(
      job.data.train_samples, job.data.test_samples, job.data.noise, job.seed));
  troupe::run_options options;
  options.on_progress = [](const troupe::progress_update& p) {
    if (p.step % 50 == 0)
      std::printf("step %ld/%ld loss %.3f\n", static_cast<long>(p.step),
                  static_cast<long>(p.total_steps), p.loss);
  };
  const auto report = troupe::plan_and_run(job, data, options);
  if (!report.succeeded()) {
    std::fprintf(stderr, "failed: %s\n", report.error.c_str());
    return 1;
  }
  std::printf("succeeded: %ld steps, test accuracy %.2f, %ld replicas, weights of %ld floats\n",
              static_cast<long>(report.steps), report.test_accuracy.value_or(0),
              static_cast<long>(report.replicas), static_cast<long>(report.final_weights.numel()));
  return 0;
}
