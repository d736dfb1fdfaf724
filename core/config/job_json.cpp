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
}

}  // namespace

nlohmann::ordered_json to_json(const job_config& job) {
  using json = nlohmann::ordered_json;
  json model = {{"type", to_string(job.model.kind)}};
  if (job.model.kind == model_kind::torchscript) {
    model["path"] = job.model.path;
  } else {
    model["hidden"] = job.model.hidden;
    model["activation"] = to_string(job.model.activation);
  }
  if (job.model.kind == model_kind::cnn) {
    model["channels"] = job.model.channels;
    model["kernel_size"] = job.model.kernel_size;
  }
  json data = {{"type", to_string(job.data.kind)}};
  if (job.data.kind == data_kind::fashion_mnist) {
    data["path"] = job.data.path;
    data["preprocessing"] = preprocessing_json(job.data.kind);
  } else if (job.data.kind == data_kind::tensors || job.data.kind == data_kind::csv) {
    data["train"] = job.data.train_file;
    data["test"] = job.data.test_file;
    if (job.data.kind == data_kind::csv)
      data["label"] = job.data.label;
    data["preprocessing"] = preprocessing_json(job.data.kind);
  } else {
    data["train_samples"] = job.data.train_samples;
    data["test_samples"] = job.data.test_samples;
    data["noise"] = job.data.noise;
  }
  if (job.data.validation > 0)
    data["validation"] = job.data.validation;
  json optimizer = {{"type", to_string(job.optimizer.kind)},
                    {"lr", job.optimizer.lr},
                    {"weight_decay", job.optimizer.weight_decay}};
  if (job.optimizer.kind == optimizer_kind::sgd) {
    optimizer["momentum"] = job.optimizer.momentum;
    optimizer["nesterov"] = job.optimizer.nesterov;
  } else {
    optimizer["betas"] = {job.optimizer.beta1, job.optimizer.beta2};
    optimizer["eps"] = job.optimizer.eps;
  }
  optimizer["schedule"] = schedule_json(job.optimizer.schedule);
  json training = json::object();
  if (job.training.steps > 0)
    training["steps"] = job.training.steps;
  else
    training["epochs"] = job.training.epochs;
  training["loss"] = to_string(job.training.loss);
  training["batch_size"] = job.training.batch_size;
  training["eval_interval"] = job.training.eval_interval;
  add_training_options(job.training, training);
  json parallelism = {{"policy", to_string(job.parallelism.policy)},
                      {"replicas", job.parallelism.replicas}};
  if (job.parallelism.threads_per_replica > 0)  // else the plan chooses, wherever it runs
    parallelism["threads_per_replica"] = job.parallelism.threads_per_replica;
  if (job.parallelism.policy == policy_kind::local_sgd) {
    parallelism["period"] = job.parallelism.period;
    parallelism["average_momenta"] = job.parallelism.average_momenta;
    if (job.parallelism.compression != compression_kind::none)
      parallelism["compression"] = to_string(job.parallelism.compression);
  }
  if (job.parallelism.policy == policy_kind::schedule) {
    json phases = json::array();
    for (std::size_t i = 0; i < job.parallelism.phases.size(); ++i) {
      const auto& phase = job.parallelism.phases[i];
      json p = {{"policy", to_string(phase.policy)}};
      if (i + 1 < job.parallelism.phases.size())
        p["steps"] = phase.steps;
      if (phase.policy == policy_kind::local_sgd) {
        p["period"] = phase.period;
        p["average_momenta"] = phase.average_momenta;
      }
      phases.push_back(p);
    }
    parallelism["phases"] = phases;
  }
  if (job.parallelism.policy == policy_kind::async) {
    // An unbounded staleness is the key's absence, so the resolved job leaves it out.
    if (job.parallelism.max_staleness)
      parallelism["max_staleness"] = *job.parallelism.max_staleness;
    parallelism["staleness_lr_scaling"] = job.parallelism.staleness_lr_scaling;
    // The default is left out, so a resolved job of before the key reads the same.
    if (job.parallelism.compression != compression_kind::none)
      parallelism["compression"] = to_string(job.parallelism.compression);
  }
  if (job.parallelism.pipelined()) {
    parallelism["stages"] = job.parallelism.stages;
    parallelism["micro_batches"] = job.parallelism.micro_batches;
    parallelism["schedule"] = to_string(job.parallelism.schedule);
    if (job.parallelism.stages > 1) {
      if (job.parallelism.split.empty())
        parallelism["split"] = "balanced";
      else
        parallelism["split"] = job.parallelism.split;
    }
  }
  json out = {{"name", job.name},
              {"seed", job.seed},
              {"model", model},
              {"data", data},
              {"optimizer", optimizer},
              {"training", training},
              {"parallelism", parallelism}};
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
    out["cluster"] = {{"nodes", job.cluster.nodes},
                      {"join_timeout_s", job.cluster.join_timeout_s},
                      {"node_timeout_s", job.cluster.node_timeout_s},
                      {"bucket_mb", job.cluster.bucket_mb},
                      {"step_timeout_s", job.cluster.step_timeout_s},
                      {"on_node_loss", to_string(job.cluster.on_node_loss)},
                      {"min_nodes", job.cluster.min_nodes},
                      {"replacement_timeout_s", job.cluster.replacement_timeout_s},
                      {"shared_memory", job.cluster.shared_memory}};
  else if (job.cluster.step_timeout_s > 0)  // the watch also applies in one process
    out["cluster"] = {{"step_timeout_s", job.cluster.step_timeout_s}};
  if (job.device.size() == 1) {
    out["device"] = job.device.front().str();
  } else {
    out["device"] = json::array();
    for (const auto& d : job.device)
      out["device"].push_back(d.str());
  }
  json faults = json::object();
  if (job.faults.throw_worker) {
    faults["throw_worker"] = *job.faults.throw_worker;
    faults["throw_step"] = job.faults.throw_step;
  }
  if (job.faults.slow_worker) {
    faults["slow_worker"] = *job.faults.slow_worker;
    faults["slow_ms"] = job.faults.slow_ms;
  }
  if (job.faults.refuse_socket_ring)
    faults["refuse_socket_ring"] = true;
  if (!faults.empty())
    out["faults"] = faults;
  return out;
}

}  // namespace troupe
