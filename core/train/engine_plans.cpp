#include "core/train/engine_plans.hpp"

namespace troupe {

training_settings settings_of(const job_config& job) {
  return {job.model, job.optimizer,           job.training,
          job.seed,  job.training.batch_size, job.data.prefetch};
}

replica_plan replica_plan_of(const job_config& job, int64_t rank) {
  const auto replicas = job.parallelism.replicas;
  return {settings_of(job), rank, replicas, shard_of(job.training.batch_size, replicas, rank)};
}

ensemble_plan ensemble_plan_of(const job_config& job) {
  return {settings_of(job), job.ensemble};
}

stage_plan stage_plan_of(const job_config& job, const stage_slice& layers, stage_position where) {
  stage_plan p{settings_of(job),
               layers,
               where,
               shard_of(job.training.batch_size, where.pipelines, where.pipeline),
               {}};
  const auto micro_batches = job.parallelism.micro_batches;
  for (int64_t m = 0; m < micro_batches; ++m) {
    const auto r = shard_of(p.rows.size(), micro_batches, m);
    p.micro_batches.push_back({p.rows.begin + r.begin, p.rows.begin + r.end});
  }
  return p;
}

}  // namespace troupe
