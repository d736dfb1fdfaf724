// to_json(): a job_config written back as JSON with every default filled in, which is what a
// run records as its resolved job.json. Keys that do not apply (a cnn's channels on an mlp, an
// optimizer's other settings) are left out, so the file reads as the job that ran.
#include "core/config/parse_job.hpp"

#include "core/data/preprocessing.hpp"

namespace troupe {
namespace {

nlohmann::ordered_json schedule_json(const lr_schedule_config& s) {
  nlohmann::ordered_json j = {{"type", to_string(s.kind)}};
  if (s.kind == lr_schedule_kind::one_cycle) {
    j["pct_start"] = s.pct_start;
    j["div_factor"] = s.div_factor;
    j["final_div_factor"] = s.final_div_factor;
    return j;
  }
  if (s.kind == lr_schedule_kind::step) {
    j["every"] = s.every;
    j["gamma"] = s.gamma;
  }
  if (s.kind == lr_schedule_kind::cosine)
    j["min_lr"] = s.min_lr;
  j["warmup_steps"] = s.warmup_steps;
  j["warmup_start_factor"] = s.warmup_start_factor;
  return j;
}

// The keys a job adds to its training section only when it uses them.
void add_training_options(const training_config& t, nlohmann::ordered_json& training) {
  if (t.clip_grad_norm)
    training["clip_grad_norm"] = *t.clip_grad_norm;
  if (t.clip_grad_value)
    training["clip_grad_value"] = *t.clip_grad_value;
  if (t.early_stopping)
    training["early_stopping"] = {{"metric", to_string(t.early_stopping->metric)},
                                  {"patience", t.early_stopping->patience},
                                  {"min_delta", t.early_stopping->min_delta}};
  if (t.keep_best)
    training["keep_best"] = to_string(*t.keep_best);
  if (t.cuda_graph)
    training["cuda_graph"] = true;
}

using json = nlohmann::ordered_json;

json model_json(const model_config& m) {
  json model = {{"type", to_string(m.kind)}};
  if (m.kind == model_kind::torchscript) {
    model["path"] = m.path;
    if (m.init_from_seed)
      model["init"] = "seed";
  } else {
    model["hidden"] = m.hidden;
    model["activation"] = to_string(m.activation);
  }
  if (m.kind == model_kind::cnn) {
    model["channels"] = m.channels;
    model["kernel_size"] = m.kernel_size;
  }
  return model;
}

json data_json(const data_config& d) {
  json data = {{"type", to_string(d.kind)}};
  if (d.kind == data_kind::fashion_mnist) {
    data["path"] = d.path;
    data["preprocessing"] = preprocessing_json(d.kind);
  } else if (d.kind == data_kind::image_folder) {
    data["train"] = d.train_file;
    data["test"] = d.test_file;
    data["image"] = {{"size", d.image.size},
                     {"channels", d.image.channels},
                     {"center_crop", d.image.center_crop}};
    if (!d.image.mean.empty())
      data["image"]["mean"] = d.image.mean;
    if (!d.image.std.empty())
      data["image"]["std"] = d.image.std;
    data["image"]["cache"] = d.image.cache_on_disk ? "disk" : "memory";
    if (!d.image.cache_dir.empty())
      data["image"]["cache_dir"] = d.image.cache_dir;
    data["augment"] = {{"random_crop_padding", d.augment.random_crop_padding},
                       {"horizontal_flip", d.augment.horizontal_flip}};
    data["bad_images"] = d.skip_bad_images ? "skip" : "error";
    data["preprocessing"] = preprocessing_json(d.kind);
  } else if (d.kind == data_kind::npy) {
    data["train"] = {{"x", d.train_arrays.x}, {"y", d.train_arrays.y}};
    data["test"] = {{"x", d.test_arrays.x}, {"y", d.test_arrays.y}};
    data["preprocessing"] = preprocessing_json(d.kind);
  } else if (d.kind == data_kind::tensors || d.kind == data_kind::csv) {
    data["train"] = d.train_file;
    data["test"] = d.test_file;
    if (d.kind == data_kind::csv)
      data["label"] = d.label;
    data["preprocessing"] = preprocessing_json(d.kind);
  } else {
    data["train_samples"] = d.train_samples;
    data["test_samples"] = d.test_samples;
    data["noise"] = d.noise;
  }
  if (d.validation > 0)
    data["validation"] = d.validation;
  data["prefetch"] = d.prefetch;
  return data;
}

json optimizer_json(const optimizer_config& o) {
  json optimizer = {{"type", to_string(o.kind)}, {"lr", o.lr}, {"weight_decay", o.weight_decay}};
  if (o.kind == optimizer_kind::sgd) {
    optimizer["momentum"] = o.momentum;
    optimizer["nesterov"] = o.nesterov;
  } else if (o.kind == optimizer_kind::rmsprop) {
    optimizer["momentum"] = o.momentum;
    optimizer["alpha"] = o.alpha;
    optimizer["eps"] = o.eps;
    optimizer["centered"] = o.centered;
  } else {
    optimizer["betas"] = {o.beta1, o.beta2};
    optimizer["eps"] = o.eps;
  }
  optimizer["schedule"] = schedule_json(o.schedule);
  return optimizer;
}

json training_json(const training_config& t) {
  json training = json::object();
  if (t.steps > 0)
    training["steps"] = t.steps;
  else
    training["epochs"] = t.epochs;
  training["loss"] = to_string(t.loss);
  if (t.precision != precision_kind::fp32)
    training["precision"] = to_string(t.precision);
  if (t.precision == precision_kind::fp16)
    training["loss_scale"] = {{"initial", t.loss_scale.initial},
                              {"growth_interval", t.loss_scale.growth_interval}};
  training["batch_size"] = t.batch_size;
  training["eval_interval"] = t.eval_interval;
  add_training_options(t, training);
  return training;
}

json phases_json(const std::vector<phase_config>& phases) {
  json out = json::array();
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const auto& phase = phases[i];
    json p = {{"policy", to_string(phase.policy)}};
    if (i + 1 < phases.size())
      p["steps"] = phase.steps;
    if (phase.policy == policy_kind::local_sgd) {
      p["period"] = phase.period;
      p["average_momenta"] = phase.average_momenta;
    }
    out.push_back(p);
  }
  return out;
}

json parallelism_json(const parallelism_config& par) {
  json parallelism = {{"policy", to_string(par.policy)}, {"replicas", par.replicas}};
  if (par.threads_per_replica > 0)  // else the plan chooses, wherever it runs
    parallelism["threads_per_replica"] = par.threads_per_replica;
  if (par.policy == policy_kind::local_sgd) {
    parallelism["period"] = par.period;
    parallelism["average_momenta"] = par.average_momenta;
    if (par.compression != compression_kind::none)
      parallelism["compression"] = to_string(par.compression);
    if (const auto& o = par.outer_optimizer; o.enabled)
      parallelism["outer_optimizer"] = {
          {"type", "sgd"}, {"lr", o.lr}, {"momentum", o.momentum}, {"nesterov", o.nesterov}};
    if (par.fragments > 1)  // the default is left out, so a resolved job of before reads the same
      parallelism["fragments"] = par.fragments;
    if (par.fragment_overlap > 0) {
      parallelism["fragment_overlap"] = par.fragment_overlap;
      parallelism["fragment_mix"] = par.fragment_mix.value_or(0.5);
    }
  }
  if (par.policy == policy_kind::schedule)
    parallelism["phases"] = phases_json(par.phases);
  if (par.policy == policy_kind::async) {
    // An unbounded staleness is the key's absence, so the resolved job leaves it out.
    if (par.max_staleness)
      parallelism["max_staleness"] = *par.max_staleness;
    parallelism["staleness_lr_scaling"] = par.staleness_lr_scaling;
    // The default is left out, so a resolved job of before the key reads the same.
    if (par.compression != compression_kind::none)
      parallelism["compression"] = to_string(par.compression);
    if (par.ps_shards > 0)
      parallelism["ps_shards"] = par.ps_shards;
  }
  if (par.pipelined()) {
    parallelism["stages"] = par.stages;
    parallelism["micro_batches"] = par.micro_batches;
    parallelism["schedule"] = to_string(par.schedule);
    if (par.stages > 1) {
      if (par.split.empty())
        parallelism["split"] = "balanced";
      else
        parallelism["split"] = par.split;
    }
  }
  return parallelism;
}

json cluster_json(const cluster_config& c) {
  return {{"nodes", c.nodes},
          {"join_timeout_s", c.join_timeout_s},
          {"node_timeout_s", c.node_timeout_s},
          {"bucket_mb", c.bucket_mb},
          {"ring_window", c.ring_window},
          {"step_timeout_s", c.step_timeout_s},
          {"on_node_loss", to_string(c.on_node_loss)},
          {"min_nodes", c.min_nodes},
          {"replacement_timeout_s", c.replacement_timeout_s},
          {"shared_memory", c.shared_memory},
          {"collective", to_string(c.collective)}};
}

json faults_json(const faults_config& f) {
  json faults = json::object();
  if (f.throw_worker) {
    faults["throw_worker"] = *f.throw_worker;
    faults["throw_step"] = f.throw_step;
  }
  if (f.slow_worker) {
    faults["slow_worker"] = *f.slow_worker;
    faults["slow_ms"] = f.slow_ms;
  }
  if (f.refuse_socket_ring)
    faults["refuse_socket_ring"] = true;
  if (f.refuse_ring_reform)
    faults["refuse_ring_reform"] = true;
  if (f.stuck_exit)
    faults["stuck_exit"] = true;
  return faults;
}

}  // namespace

nlohmann::ordered_json to_json(const job_config& job) {
  json out = {{"name", job.name},
              {"seed", job.seed},
              {"model", model_json(job.model)},
              {"data", data_json(job.data)},
              {"optimizer", optimizer_json(job.optimizer)},
              {"training", training_json(job.training)},
              {"parallelism", parallelism_json(job.parallelism)}};
  if (job.ensemble.enabled()) {
    json ensemble = {{"members", job.ensemble.members},
                     {"distinct_data_order", job.ensemble.distinct_data_order}};
    if (!job.ensemble.lrs.empty())
      ensemble["lrs"] = job.ensemble.lrs;
    out["ensemble"] = ensemble;
  }
  if (job.checkpoint.enabled())
    out["checkpoint"] = {{"every_steps", job.checkpoint.every_steps},
                         {"every_s", job.checkpoint.every_s},
                         {"keep", job.checkpoint.keep}};
  if (job.cluster.enabled())
    out["cluster"] = cluster_json(job.cluster);
  else if (job.cluster.step_timeout_s > 0)  // the watch also applies in one process
    out["cluster"] = {{"step_timeout_s", job.cluster.step_timeout_s}};
  if (job.device.size() == 1) {
    out["device"] = job.device.front().str();
  } else {
    out["device"] = json::array();
    for (const auto& d : job.device)
      out["device"].push_back(d.str());
  }
  if (job.deterministic)
    out["deterministic"] = true;
  if (job.gpu_memory_mb)
    out["gpu_memory_mb"] = *job.gpu_memory_mb;
  if (auto faults = faults_json(job.faults); !faults.empty())
    out["faults"] = faults;
  return out;
}

}  // namespace troupe
