// The reference every benchmark compares against: the training loop anyone would write with
// LibTorch alone (one model, whole batch, zero_grad / forward / backward / step), timed over
// `steps` steps after `warmup` untimed ones.
#pragma once

#include "core/data/batch_plan.hpp"
#include "core/data/dataset.hpp"
#include "core/job/job_config.hpp"
#include "core/model/network.hpp"
#include "core/optim/make_optimizer.hpp"

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/nn/functional/loss.h>

#include <chrono>

namespace troupe::bench {

/// Samples per second of the timed steps, on `threads` intra-op threads of the calling thread.
/// On a GPU `device` the model lives there and each batch is copied to it as a plain loop would
/// (`.to(device)`); `finish` waits for the device's queued work before the clock stops.
inline double plain_loop(const job_config& job, const dataset& data, int64_t threads,
                         int64_t warmup, int64_t steps, const at::Device& device = at::kCPU,
                         void (*finish)() = nullptr) {
  using clock_type = std::chrono::steady_clock;
  const int64_t batch = job.training.batch_size;
  at::set_num_threads(static_cast<int>(threads));
  at::manual_seed(job.seed);
  network model(job.model, data.classes);  // the built-in layers, or the job's TorchScript file
  model.to(device);
  model.set_training(true);
  auto optimizer = make_optimizer(job.optimizer, model.parameters());
  batch_plan plan(data.train.size(), batch, job.seed);
  clock_type::time_point start;
  for (int64_t step = 0; step < warmup + steps; ++step) {
    if (step == warmup)
      start = clock_type::now();
    auto index = plan.indices(step, {0, batch});
    auto images = data.train.images.gather(index).to(device);
    auto labels = data.train.labels.index_select(0, index).to(device);
    optimizer->zero_grad();
    auto loss = torch::nn::functional::cross_entropy(model.forward(images), labels);
    loss.backward();
    optimizer->step();
  }
  if (finish != nullptr)
    finish();
  const double seconds = std::chrono::duration<double>(clock_type::now() - start).count();
  return static_cast<double>(steps * batch) / seconds;
}

}  // namespace troupe::bench
