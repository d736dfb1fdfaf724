#include "core/train/plan.hpp"

#include "core/data/batch_plan.hpp"
#include "core/errors.hpp"

#include <sstream>
#include <thread>

namespace troupe {

run_plan make_plan(const job_config& job, int64_t train_samples, int64_t classes) {
  run_plan p;
  p.train_samples = train_samples;
  p.steps_per_epoch = train_samples / job.training.batch_size;
  if (p.steps_per_epoch == 0)
    throw job_error({"/training/batch_size: must be at most the " + std::to_string(train_samples) +
                     " training samples, got " + std::to_string(job.training.batch_size)});
  p.total_steps =
      job.training.steps > 0 ? job.training.steps : job.training.epochs * p.steps_per_epoch;
  auto model = build_model(job.model, classes);
  p.layers = summarize_layers(model);
  p.parameters = count_parameters(model);
  for (int64_t r = 0; r < job.parallelism.replicas; ++r)
    p.rows_per_replica.push_back(
        shard_of(job.training.batch_size, job.parallelism.replicas, r).size());
  // sync: each worker hands its gradient to the coordinator and gets the combined one back,
  // float32 over every parameter, every step. local_sgd: its weights (and momenta when those
  // are averaged too) every `period` steps, averaged here per step. In-process these travel by
  // handle; the figures are what a step moves between processes.
  const int64_t tensor_bytes = p.parameters * 4;
  // async: each step a worker pushes its gradient and pulls the weights, every parameter each.
  if (job.parallelism.policy == policy_kind::local_sgd) {
    const int64_t per_round = tensor_bytes * (job.parallelism.average_momenta ? 2 : 1);
    p.bytes_sent_per_step = per_round / job.parallelism.period;
  } else {
    p.bytes_sent_per_step = tensor_bytes;
  }
  p.bytes_received_per_step = p.bytes_sent_per_step;
  p.threads_total = job.parallelism.replicas * job.parallelism.threads_per_replica;
  p.hardware_threads = std::thread::hardware_concurrency();
  return p;
}

std::string render_plan(const job_config& job, const run_plan& p) {
  std::ostringstream out;
  out << "job " << job.name << " (seed " << job.seed << ")\n";
  out << "  policy: " << to_string(job.parallelism.policy);
  if (job.parallelism.policy == policy_kind::local_sgd)
    out << " (average every " << job.parallelism.period << " steps"
        << (job.parallelism.average_momenta ? ", momenta too" : "") << ")";
  if (job.parallelism.policy == policy_kind::async)
    out << " (parameter server, max staleness "
        << (job.parallelism.max_staleness ? std::to_string(*job.parallelism.max_staleness)
                                          : std::string("unbounded"))
        << (job.parallelism.staleness_lr_scaling ? ", lr / (1 + staleness)" : "") << ")";
  out << ", " << job.parallelism.replicas << " replica(s) x " << job.parallelism.threads_per_replica
      << " thread(s) = " << p.threads_total << " thread(s) on " << p.hardware_threads
      << " hardware thread(s)";
  if (p.hardware_threads > 0 && p.threads_total > static_cast<int64_t>(p.hardware_threads))
    out << "  [warning: oversubscribed, expect contention]";
  out << "\n  model: " << to_string(job.model.kind) << ", " << p.parameters << " parameters\n";
  for (const auto& layer : p.layers) {
    out << "    " << layer.name << " (" << layer.kind << ")";
    if (layer.parameters > 0)
      out << ": " << layer.parameters << " parameters";
    out << '\n';
  }
  out << "  data: " << to_string(job.data.kind) << ", " << p.train_samples << " training samples\n";
  out << "  optimizer: " << to_string(job.optimizer.kind) << ", lr " << job.optimizer.lr << '\n';
  out << "  training: " << p.total_steps << " steps (" << p.steps_per_epoch
      << " per epoch) of global batch " << job.training.batch_size << ", rows per replica:";
  for (auto rows : p.rows_per_replica)
    out << ' ' << rows;
  out << "\n  per worker and step"
      << (job.parallelism.policy == policy_kind::local_sgd ? " (mean)" : "") << ": sends "
      << p.bytes_sent_per_step << " bytes, receives " << p.bytes_received_per_step
      << " bytes (by handle in-process)\n";
  return out.str();
}

}  // namespace troupe
