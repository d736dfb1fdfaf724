#include "core/train/plan.hpp"

#include "core/data/batch_plan.hpp"
#include "core/errors.hpp"
#include "core/policy/policy_schedule.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>

#include <sstream>
#include <thread>

namespace troupe {

namespace {

// Floats per sample that leave each stage but the last: one row through the model, layer by
// layer (cheap: no data, no gradients).
std::vector<int64_t> boundary_floats(torch::nn::Sequential& model,
                                     const std::vector<stage_slice>& stages) {
  torch::NoGradGuard no_grad;
  auto x = at::zeros({1, 1, image_side, image_side});
  std::vector<int64_t> after_layer;
  for (auto& layer : *model) {
    x = layer.forward(x);
    after_layer.push_back(x.numel());
  }
  std::vector<int64_t> floats;
  for (std::size_t s = 0; s + 1 < stages.size(); ++s)
    floats.push_back(after_layer[static_cast<std::size_t>(stages[s].end - 1)]);
  return floats;
}

void add_pipeline(const job_config& job, torch::nn::Sequential& model, run_plan& p) {
  const auto& par = job.parallelism;
  p.stages = split_stages(p.layers, par.stages, par.split);
  p.boundary_floats_per_row = boundary_floats(model, p.stages);
  for (int64_t m = 0; m < par.micro_batches; ++m)
    p.micro_batch_rows.push_back(shard_of(p.rows_per_replica.front(), par.micro_batches, m).size());
  p.predicted_bubble = predicted_bubble_fraction(par.stages, par.micro_batches);
}

void render_pipeline(std::ostringstream& out, const job_config& job, const run_plan& p) {
  const auto& par = job.parallelism;
  out << "  pipeline: " << par.stages << " stage(s), " << par.micro_batches
      << " micro-batch(es) of rows";
  for (auto rows : p.micro_batch_rows)
    out << ' ' << rows;
  out << " (replica 0), schedule " << to_string(par.schedule) << ", predicted bubble "
      << static_cast<int>(p.predicted_bubble * 1000 + 0.5) / 10.0 << "% = (P-1)/(M+P-1)\n";
  int64_t largest = 0;
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const auto& st = p.stages[s];
    largest = std::max(largest, st.parameters);
    out << "    stage " << s << ": " << p.layers[static_cast<std::size_t>(st.begin)].name;
    if (st.end - st.begin > 1)
      out << ".." << p.layers[static_cast<std::size_t>(st.end - 1)].name;
    out << " (" << st.end - st.begin << " layers), " << st.parameters << " parameters";
    if (s < p.boundary_floats_per_row.size())
      out << ", sends " << p.boundary_floats_per_row[s] * 4 << " bytes per row on";
    out << '\n';
  }
  if (par.stages > 1) {
    if (par.split.empty())
      out << "    split balanced by parameter count: largest stage " << largest << " of "
          << p.parameters << " (ideal " << p.parameters / par.stages << ")\n";
    else
      out << "    split as given: stages begin at the listed layers\n";
  }
}

}  // namespace

run_plan make_plan(const job_config& job, int64_t train_samples, int64_t classes,
                   const device_inventory& inventory) {
  run_plan p;
  p.devices = make_device_plan(job, inventory);
  p.train_samples = train_samples;
  p.steps_per_epoch = train_samples / job.training.batch_size;
  if (p.steps_per_epoch == 0)
    throw job_error({"/training/batch_size: must be at most the " + std::to_string(train_samples) +
                     " training samples, got " + std::to_string(job.training.batch_size)});
  p.total_steps =
      job.training.steps > 0 ? job.training.steps : job.training.epochs * p.steps_per_epoch;
  // A phase that would start after the last step is almost surely a mistake in the job.
  int64_t phase_start = 0;
  for (std::size_t i = 0; i < job.parallelism.phases.size(); ++i) {
    if (phase_start >= p.total_steps)
      throw job_error({"/parallelism/phases/" + std::to_string(i) + ": would start at step " +
                       std::to_string(phase_start) + " but the run has only " +
                       std::to_string(p.total_steps) + " steps"});
    phase_start += job.parallelism.phases[i].steps;
  }
  auto model = build_model(job.model, classes);
  p.layers = summarize_layers(model);
  p.parameters = count_parameters(model);
  for (int64_t r = 0; r < job.parallelism.replicas; ++r)
    p.rows_per_replica.push_back(
        shard_of(job.training.batch_size, job.parallelism.replicas, r).size());
  // sync: each worker hands its gradient to the coordinator and gets the combined one back,
  // float32 over every parameter, every step. async: it pushes its gradient and pulls the
  // weights, every step. local_sgd: its weights (and momenta when those are averaged too) every
  // `period` steps. A schedule: the mean over its phases. In-process these travel by handle; the
  // figures are what a step would move between processes.
  const double tensor_bytes = static_cast<double>(p.parameters) * 4;
  const policy_schedule schedule(job, p.total_steps, p.steps_per_epoch);
  double total_bytes = 0;
  for (const auto& ph : schedule.phases()) {
    const double steps = static_cast<double>(ph.end_step - ph.first_step);
    if (ph.config.policy == policy_kind::local_sgd)
      total_bytes += steps / static_cast<double>(ph.config.period) * tensor_bytes *
                     (ph.config.average_momenta ? 2 : 1);
    else
      total_bytes += steps * tensor_bytes;
  }
  p.bytes_sent_per_step =
      static_cast<int64_t>(total_bytes / static_cast<double>(p.total_steps) + 0.5);
  p.bytes_received_per_step = p.bytes_sent_per_step;
  if (job.parallelism.pipelined())
    add_pipeline(job, model, p);
  p.threads_total =
      job.parallelism.replicas * job.parallelism.stages * job.parallelism.threads_per_replica;
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
  if (job.parallelism.policy == policy_kind::schedule) {
    const policy_schedule schedule(job, p.total_steps, p.steps_per_epoch);
    for (const auto& ph : schedule.phases()) {
      out << (ph.first_step == 0 ? " [" : ", ") << "steps " << ph.first_step << ".."
          << ph.end_step - 1 << ": " << to_string(ph.config.policy);
      if (ph.config.policy == policy_kind::local_sgd)
        out << " every " << ph.config.period;
    }
    out << "]";
  }
  if (job.parallelism.policy == policy_kind::async)
    out << " (parameter server, max staleness "
        << (job.parallelism.max_staleness ? std::to_string(*job.parallelism.max_staleness)
                                          : std::string("unbounded"))
        << (job.parallelism.staleness_lr_scaling ? ", lr / (1 + staleness)" : "") << ")";
  out << ", " << job.parallelism.replicas << " replica(s) x ";
  if (job.parallelism.stages > 1)
    out << job.parallelism.stages << " stages x ";
  out << job.parallelism.threads_per_replica << " thread(s) = " << p.threads_total
      << " thread(s) on " << p.hardware_threads << " hardware thread(s)";
  if (p.hardware_threads > 0 && p.threads_total > static_cast<int64_t>(p.hardware_threads))
    out << "  [warning: oversubscribed, expect contention]";
  out << "\n  devices: " << render_device_plan(p.devices);
  out << "\n  model: " << to_string(job.model.kind) << ", " << p.parameters << " parameters\n";
  for (const auto& layer : p.layers) {
    out << "    " << layer.name << " (" << layer.kind << ")";
    if (layer.parameters > 0)
      out << ": " << layer.parameters << " parameters";
    out << '\n';
  }
  if (job.parallelism.pipelined())
    render_pipeline(out, job, p);
  if (job.ensemble.enabled()) {
    const auto& e = job.ensemble;
    out << "  ensemble: " << e.members << " members stacked into one model (weights [" << e.members
        << ", ...]; Linear as batched matmul, Conv2d as one grouped convolution), member k "
        << "starts from seed " << job.seed << " + k, "
        << (e.distinct_data_order ? "each with its own data order" : "all on the same batches");
    if (!e.lrs.empty()) {
      out << ", lrs";
      for (double lr : e.lrs)
        out << ' ' << lr;
    }
    out << "; " << p.parameters * e.members << " parameters in all\n";
  }
  out << "  data: " << to_string(job.data.kind) << ", " << p.train_samples << " training samples\n";
  out << "  optimizer: " << to_string(job.optimizer.kind) << ", lr " << job.optimizer.lr << '\n';
  out << "  training: " << p.total_steps << " steps (" << p.steps_per_epoch
      << " per epoch) of global batch " << job.training.batch_size << ", rows per replica:";
  for (auto rows : p.rows_per_replica)
    out << ' ' << rows;
  if (job.ensemble.enabled()) {
    out << "\n  one worker: nothing is exchanged\n";
    return out.str();
  }
  if (job.cluster.enabled()) {
    out << "\n  across " << job.cluster.nodes << " node process(es)";
    if (job.parallelism.policy == policy_kind::sync && job.parallelism.replicas > 1) {
      const auto grad_bytes = static_cast<int64_t>(p.parameters) * 4;
      out << ": each replica sends "
          << grad_bytes * 2 * (job.parallelism.replicas - 1) / job.parallelism.replicas
          << " bytes per step in the ring all-reduce (buckets of " << job.cluster.bucket_mb
          << " MiB)\n";
    } else {
      out << ": exchanges go through the coordinator as serialized tensors\n";
    }
    return out.str();
  }
  const bool varies = job.parallelism.policy == policy_kind::local_sgd ||
                      job.parallelism.policy == policy_kind::schedule;
  out << "\n  per " << (job.parallelism.stages > 1 ? "replica (all its stages)" : "worker")
      << " and step" << (varies ? " (mean)" : "") << ": sends " << p.bytes_sent_per_step
      << " bytes, receives " << p.bytes_received_per_step << " bytes (by handle in-process)\n";
  return out.str();
}

}  // namespace troupe
