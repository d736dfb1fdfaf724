// `troupe validate` and `troupe run` print the plan with this: one line per decision, so a user
// sees before anything runs what will happen (and what each step will send).
#include "core/run/run_plan.hpp"

#include "core/data/targets.hpp"
#include "core/optim/lr_schedule.hpp"
#include "core/run/disk_fit.hpp"
#include "core/train/loss.hpp"

#include <fmt/format.h>

#include <sstream>

namespace troupe {
namespace {

// How far apart streaming fragments' averages come: fragment f is offset by f * period / F
// steps (rounded down), so where F does not divide the period the gaps are its floor and ceil
// (period 3, 2 fragments: after steps 2, 3, 5, 6, ...).
std::string fragment_spacing(int64_t period, int64_t fragments) {
  const auto gap = period / fragments;
  return period % fragments == 0 ? std::to_string(gap)
                                 : std::to_string(gap) + " or " + std::to_string(gap + 1);
}

void render_policy(std::ostringstream& out, const run_plan& p) {
  const auto& par = p.job.parallelism;
  out << "  policy: " << to_string(par.policy);
  if (par.policy == policy_kind::local_sgd && par.fragments > 1)
    out << " (" << par.fragments << " streaming fragments, each averaged every " << par.period
        << " steps, one every " << fragment_spacing(par.period, par.fragments)
        << (par.fragment_overlap > 0
                ? ", merged " + std::to_string(par.fragment_overlap) +
                      " steps later while the replicas go on (the average's share " +
                      fmt::format("{:g}", par.fragment_mix.value_or(0.5)) + ")"
                : std::string())
        << (par.compression != compression_kind::none
                ? std::string(", weights ") + to_string(par.compression) + " on the wire"
                : std::string())
        << ")";
  else if (par.policy == policy_kind::local_sgd)
    out << " (average every " << par.period << " steps"
        << (par.average_momenta ? ", momenta too" : "")
        << (par.compression != compression_kind::none
                ? std::string(", weights ") + to_string(par.compression) + " on the wire"
                : std::string())
        << ")";
  if (par.policy == policy_kind::schedule) {
    for (const auto& ph : p.schedule.phases()) {
      out << (ph.first_step == 0 ? " [" : ", ") << "steps " << ph.first_step << ".."
          << ph.end_step - 1 << ": " << to_string(ph.config.policy);
      if (ph.config.policy == policy_kind::local_sgd)
        out << " every " << ph.config.period;
    }
    out << "]";
  }
  if (par.policy == policy_kind::async)
    out << " (parameter server"
        << (p.sharded_server() ? " in " + std::to_string(p.server_shards()) + " shards" : "")
        << ", max staleness "
        << (par.max_staleness ? std::to_string(*par.max_staleness) : std::string("unbounded"))
        << (par.staleness_lr_scaling ? ", lr / (1 + staleness)" : "")
        << (par.compression != compression_kind::none
                ? std::string(", ") + to_string(par.compression) + " on the wire"
                : std::string())
        << ")";
  out << ", " << par.replicas << " replica(s) x ";
  if (par.stages > 1)
    out << par.stages << " stages x ";
  out << par.threads_per_replica
      << (p.threads_chosen ? " thread(s) (the plan's choice)" : " thread(s)") << " = "
      << p.threads_total << " thread(s) on " << p.hardware_threads << " hardware thread(s)";
  if (p.hardware_threads > 0 && p.threads_total > static_cast<int64_t>(p.hardware_threads))
    out << "  [warning: oversubscribed, expect contention]";
  out << "\n  devices: " << render_device_plan(p.devices);
  if (p.job.gpu_memory_mb)
    out << "; this process holds at most " << *p.job.gpu_memory_mb << " MB on each GPU";
}

void render_model(std::ostringstream& out, const run_plan& p) {
  out << "\n  model: " << to_string(p.job.model.kind);
  if (p.job.model.kind == model_kind::torchscript)
    out << " (" << p.job.model.path
        << (p.job.model.init_from_seed ? ", its parameters drawn from the seed)"
                                       : ", trained from the weights saved in it)");
  out << ", " << p.model.parameters << " parameters";
  if (p.model.buffer_values > 0)
    out << " and " << p.model.buffer_values
        << " buffer values (replicas combine them as they combine gradients)";
  out << ", " << p.data.classes << " outputs\n";
  if (!p.model.random_ops.empty()) {
    out << "    random numbers: its forward draws them (";
    for (std::size_t i = 0; i < p.model.random_ops.size(); ++i)
      out << (i > 0 ? ", " : "") << p.model.random_ops[i];
    out << "); each worker's draws are seeded by the job's seed, the worker and the step, so "
           "the run is reproducible, and its workers' forward passes take turns\n";
  }
  for (const auto& layer : p.model.layers) {
    out << "    " << layer.name << " (" << layer.kind << ")";
    if (layer.parameters > 0)
      out << ": " << layer.parameters << " parameters";
    out << '\n';
  }
}

void render_pipeline(std::ostringstream& out, const run_plan& p) {
  const auto& par = p.job.parallelism;
  out << "  pipeline: " << par.stages << " stage(s), " << par.micro_batches
      << " micro-batch(es) of rows";
  for (auto rows : p.micro_batch_rows)
    out << ' ' << rows;
  out << " (replica 0), schedule " << to_string(par.schedule) << ", predicted bubble "
      << static_cast<int>(p.predicted_bubble * 1000 + 0.5) / 10.0 << "% = (P-1)/(M+P-1)\n";
  int64_t largest = 0;
  const auto& layers = p.model.layers;
  for (std::size_t s = 0; s < p.stages.size(); ++s) {
    const auto& st = p.stages[s];
    largest = std::max(largest, st.parameters);
    out << "    stage " << s << ": " << layers[static_cast<std::size_t>(st.begin)].name;
    if (st.end - st.begin > 1)
      out << ".." << layers[static_cast<std::size_t>(st.end - 1)].name;
    out << " (" << st.end - st.begin << " layers), " << st.parameters << " parameters";
    if (s < p.boundary_floats_per_row.size())
      out << ", sends " << p.boundary_floats_per_row[s] * 4 << " bytes per row on";
    out << '\n';
  }
  if (par.stages > 1) {
    if (par.split.empty())
      out << "    split balanced by parameter count: largest stage " << largest << " of "
          << p.model.parameters << " (ideal " << p.model.parameters / par.stages << ")\n";
    else
      out << "    split as given: stages begin at the listed layers\n";
  }
}

void render_ensemble(std::ostringstream& out, const run_plan& p) {
  const auto& e = p.job.ensemble;
  out << "  ensemble: " << e.members << " members stacked into one model (weights [" << e.members
      << ", ...]; Linear as batched matmul, Conv2d as one grouped convolution), member k "
      << "starts from seed " << p.job.seed << " + k, "
      << (e.distinct_data_order ? "each with its own data order" : "all on the same batches");
  if (!e.lrs.empty()) {
    out << ", lrs";
    for (double lr : e.lrs)
      out << ' ' << lr;
  }
  out << "; " << p.model.parameters * e.members << " parameters in all\n";
}

const char* meeting_text(gradient_meeting g) {
  switch (g) {
    case gradient_meeting::local:
      return "each worker applies its own (nothing to combine)";
    case gradient_meeting::driver:
      return "summed by the run driver in rank order (on the GPU the workers share, if they "
             "do), sent back to every worker";
    case gradient_meeting::ring:
      return "summed among the replicas in a ring all-reduce";
    case gradient_meeting::nccl:
      return "summed among the replicas by NCCL all-reduce";
    case gradient_meeting::shared:
      return "summed among the replicas in shared memory, each a slice of every gradient, in "
             "rank order";
  }
  return "?";
}

void render_exchange(std::ostringstream& out, const run_plan& p) {
  const auto& job = p.job;
  // local_sgd has no sync steps: its replicas average weights (said with its policy).
  if (job.parallelism.policy != policy_kind::async &&
      job.parallelism.policy != policy_kind::local_sgd) {
    out << "\n  gradients of sync steps: " << meeting_text(p.gradients);
    if (p.gradients == gradient_meeting::ring && job.on_cuda())
      out << ", each GPU's copied to pinned host memory and the sum back";
  }
  if (p.mode == run_mode::ensemble) {
    out << "\n  one worker: nothing is exchanged\n";
    return;
  }
  if (job.cluster.enabled()) {
    out << "\n  across " << job.cluster.nodes << " node process(es)";
    if (job.parallelism.policy == policy_kind::async) {
      out << ": each worker pushes " << p.bytes_sent_per_step
          << " bytes of gradient per step to the parameter server and pulls as many of weights"
          << (p.sharded_server() ? " (a slice from each shard, straight from its node)"
                                 : " (through the coordinator)")
          << (job.parallelism.compression == compression_kind::bf16 ? ", half on the wire (bf16)"
              : job.parallelism.compression == compression_kind::int8
                  ? ", about a quarter on the wire (int8)"
                  : "")
          << "\n";
    } else if (p.gradients == gradient_meeting::ring) {
      const auto grad_bytes = p.model.flat_size() * 4;
      const auto n = job.parallelism.replicas;
      out << ": each replica sends " << grad_bytes * 2 * (n - 1) / n;
      if (job.cluster.collective == node_collective::gloo)
        out << " bytes per step (about: more where the replicas are not a power of two) in "
               "gloo's halving-doubling all-reduce (cluster.collective \"gloo\", plain TCP)\n";
      else
        out << " bytes per step in the ring all-reduce (buckets of " << job.cluster.bucket_mb
            << " MiB)"
            // Decided once the nodes have joined (the log says which): the plan cannot know.
            << (job.cluster.shared_memory && job.cluster.on_node_loss == node_loss_policy::fail
                    ? "; where every node runs on one machine they sum in its shared memory "
                      "instead (cluster.shared_memory)"
                    : "")
            << "\n";
    } else {
      out << ": exchanges go through the coordinator as serialized tensors\n";
    }
    return;
  }
  const bool varies = job.parallelism.policy == policy_kind::local_sgd ||
                      job.parallelism.policy == policy_kind::schedule;
  out << "\n  per " << (job.parallelism.stages > 1 ? "replica (all its stages)" : "worker")
      << " and step" << (varies ? " (mean)" : "") << ": sends " << p.bytes_sent_per_step
      << " bytes, receives " << p.bytes_received_per_step << " bytes (by handle in-process)\n";
}

void render_data(std::ostringstream& out, const run_plan& p) {
  out << "  data: " << to_string(p.job.data.kind) << ", " << p.data.train_rows
      << " training samples, ";
  if (p.data.validation_rows > 0)
    out << p.data.validation_rows << " validation samples (held out of the training set by "
        << "seed; evaluations use them), ";
  out << p.data.test_rows << " test samples"
      << (p.data.validation_rows > 0 ? " (evaluated once, at the end)" : "");
  if (p.data.skipped_rows > 0)
    out << " (" << p.data.skipped_rows << " unreadable images left out, data.bad_images \"skip\")";
  if (p.job.data.kind == data_kind::tensors || p.job.data.kind == data_kind::csv ||
      p.job.data.kind == data_kind::npy || p.job.data.kind == data_kind::image_folder) {
    out << ", rows of shape [";
    for (std::size_t d = 0; d < p.data.row_shape.size(); ++d)
      out << (d > 0 ? ", " : "") << p.data.row_shape[d];
    out << "], ";
    if (p.data.class_labels)
      out << p.data.classes << " classes";
    else
      out << describe_targets(false, p.data.target_shape);
  }
  out << '\n';
  out << "  loss: " << to_string(p.job.training.loss) << " (evaluations report "
      << metric_name(p.job.training.loss)
      << (p.job.training.loss == loss_kind::bce_with_logits ? " at 0.5" : "") << ")\n";
  if (p.job.training.precision != precision_kind::fp32)
    out << "  precision: " << to_string(p.job.training.precision)
        << " autocast of the forward (weights, gradients and optimizer in float32)\n";
  if (p.job.training.precision == precision_kind::fp16)
    out << "  loss scale: " << p.job.training.loss_scale.initial
        << " at the start, halved (and the step skipped) when the gradient overflows, doubled "
           "after "
        << p.job.training.loss_scale.growth_interval << " finite steps in a row\n";
}

void render_optimizer(std::ostringstream& out, const run_plan& p) {
  const auto& o = p.job.optimizer;
  const auto& t = p.job.training;
  out << "  optimizer: " << to_string(o.kind) << ", lr " << o.lr;
  if (o.kind == optimizer_kind::sgd && o.momentum > 0)
    out << ", momentum " << o.momentum << (o.nesterov ? " (nesterov)" : "");
  if (o.kind == optimizer_kind::rmsprop) {
    out << ", alpha " << o.alpha;
    if (o.momentum > 0)
      out << ", momentum " << o.momentum;
    if (o.centered)
      out << ", centered";
  }
  if (o.weight_decay > 0)
    out << ", weight decay " << o.weight_decay
        << (o.kind == optimizer_kind::adamw ? " (decoupled)" : "");
  out << "; lr schedule: " << describe_schedule(o, p.rules.total_steps()) << '\n';
  if (t.clip_grad_norm)
    out << "  clipping: the combined gradient's global norm to " << *t.clip_grad_norm
        << (p.sharded_server()     ? " (each pushed gradient, by its worker)"
            : p.parameter_server() ? " (each pushed gradient)"
                                   : "")
        << '\n';
  if (t.clip_grad_value)
    out << "  clipping: every gradient element to +-" << *t.clip_grad_value << '\n';
  if (t.early_stopping)
    out << "  early stopping: after " << t.early_stopping->patience << " evaluation(s) without "
        << to_string(t.early_stopping->metric) << " improving by more than "
        << t.early_stopping->min_delta << '\n';
  if (t.keep_best)
    out << "  keep best: the weights at the best " << to_string(*t.keep_best)
        << " as best_weights.pt\n";
}

void render_checkpoints(std::ostringstream& out, const run_plan& p) {
  const auto& c = p.job.checkpoint;
  if (!c.enabled())
    return;
  out << "  checkpoints:";
  if (c.every_steps > 0)
    out << " every " << c.every_steps << " steps";
  if (c.every_steps > 0 && c.every_s > 0)
    out << " and";
  if (c.every_s > 0)
    out << " every " << c.every_s << " s";
  out << " (" << p.checkpoint_parts() << " part(s) of state), the newest " << c.keep
      << " kept in checkpoints/\n";
  const double each = checkpoint_bytes(p);
  const auto most = checkpoints_at_most(p);
  out << fmt::format("  checkpoint disk: about {:.1f} MB each, at most {} at once ({:.1f} MB)\n",
                     each / 1e6, most, each * static_cast<double>(most) / 1e6);
}

}  // namespace

std::string render_plan(const run_plan& p) {
  const auto& job = p.job;
  std::ostringstream out;
  out << "job " << job.name << " (seed " << job.seed << ")\n";
  render_policy(out, p);
  render_model(out, p);
  if (p.mode == run_mode::pipeline)
    render_pipeline(out, p);
  if (p.mode == run_mode::ensemble)
    render_ensemble(out, p);
  render_data(out, p);
  render_optimizer(out, p);
  render_checkpoints(out, p);
  out << "  training: " << p.rules.total_steps() << " steps (" << p.rules.steps_per_epoch()
      << " per epoch) of global batch " << job.training.batch_size << ", rows per replica:";
  for (auto rows : p.rows_per_replica)
    out << ' ' << rows;
  render_exchange(out, p);
  return out.str();
}

}  // namespace troupe
