// Small jobs for actor tests: a synthetic data set so that a test takes a second, not minutes.
#pragma once

#include "actors/run_job.hpp"
#include "core/data/data_source.hpp"
#include "core/job/job_config.hpp"

#include <ATen/ATen.h>

#include <memory>

namespace troupe::test {

inline job_config small_job(int64_t replicas, int64_t steps) {
  job_config job;
  job.name = "test";
  job.seed = 3;
  job.model.hidden = {32, 16};
  job.data.kind = data_kind::synthetic;
  job.data.train_samples = 512;
  job.data.test_samples = 128;
  job.optimizer.lr = 0.05;
  job.optimizer.momentum = 0.9;
  job.training.epochs = 0;
  job.training.steps = steps;
  job.training.batch_size = 32;
  job.training.eval_interval = 10;
  job.parallelism.replicas = replicas;
  return job;
}

/// The job's synthetic set, its validation rows held out (as `troupe run` loads it).
inline dataset_ptr small_data(const job_config& job) {
  return load_dataset(job.data, job.seed);
}

/// The largest difference between two tensors' values.
inline double max_abs_diff(const at::Tensor& a, const at::Tensor& b) {
  return (a - b).abs().max().item<double>();
}

}  // namespace troupe::test
