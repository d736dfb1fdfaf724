// The training and parallelism sections of a job: how long, on what loss, and how replicas
// and stages share the work. Internal to parse_job (core/config/parse_job.cpp).
#include "core/config/enum_names.hpp"
#include "core/config/parse_run_sections.hpp"

#include <cmath>
#include <cstdint>
#include <utility>

namespace troupe {
namespace {

void read_early_stopping(object_reader& parent, std::optional<early_stopping_config>& out) {
  if (!parent.has("early_stopping"))
    return;
  auto r = parent.object("early_stopping");
  early_stopping_config e;
  read_enum(r, "metric", monitor_names, e.metric);
  r.integer("patience", e.patience, 1, 1000000);
  r.number("min_delta", e.min_delta, 0, false, HUGE_VAL, false);
  r.finish({"metric", "patience", "min_delta"});
  out = e;
}

// fp16's loss scaling: GradScaler's init_scale and growth_interval. Scales beyond 2^127 would
// overflow float32 on their own.
void read_loss_scale(object_reader& parent, training_config& t) {
  if (!parent.has("loss_scale"))
    return;
  auto r = parent.object("loss_scale");
  r.number("initial", t.loss_scale.initial, 1, false, 0x1p127, false);
  r.integer("growth_interval", t.loss_scale.growth_interval, 1, 1000000000);
  r.finish({"initial", "growth_interval"});
  if (t.precision != precision_kind::fp16 && r.valid())
    parent.problem("loss_scale", "scales fp16's losses; give it with precision \"fp16\" only");
}

// true (early stopping's metric, or the validation loss), false, or a metric's name.
void read_keep_best(object_reader& r, training_config& t) {
  const auto* v = r.peek("keep_best");
  if (v == nullptr)
    return;
  if (v->is_string()) {
    monitor_metric m = monitor_metric::validation_loss;
    if (read_enum(r, "keep_best", monitor_names, m))
      t.keep_best = m;
    return;
  }
  bool keep = false;
  if (v->is_boolean() && r.boolean("keep_best", keep)) {
    if (keep)
      t.keep_best = t.early_stopping ? t.early_stopping->metric : monitor_metric::validation_loss;
    return;
  }
  r.skip("keep_best");
  r.problem("keep_best",
            "must be true, false, \"validation_loss\" or \"validation_accuracy\", "
            "got " +
                render_value(*v));
}

}  // namespace

void read_training(object_reader r, training_config& t) {
  if (r.has("epochs") && r.has("steps"))
    r.object_problem(
        "give either epochs or steps, not both (remove one from the file, or give the length "
        "with --set training.steps=N or --set training.epochs=N, which replaces the other)");
  if (r.has("steps"))
    t.epochs = 0;
  r.integer("epochs", t.epochs, 1, 1000000);
  t.steps = 0;
  r.integer("steps", t.steps, 1, INT64_C(1) << 40);
  read_enum(r, "loss", loss_names, t.loss);
  read_enum(r, "precision", precision_names, t.precision);
  r.boolean("cuda_graph", t.cuda_graph);
  r.integer("batch_size", t.batch_size, 1, 1 << 20);
  r.integer("eval_interval", t.eval_interval, 0, INT64_MAX);
  for (const auto& [key, out] : {std::pair{"clip_grad_norm", &t.clip_grad_norm},
                                 std::pair{"clip_grad_value", &t.clip_grad_value}}) {
    double limit = 0;
    if (r.has(key) && r.number(key, limit, 0, true, HUGE_VAL, false))
      *out = limit;
  }
  read_early_stopping(r, t.early_stopping);
  read_keep_best(r, t);
  read_loss_scale(r, t);
  r.finish({"epochs", "steps", "loss", "precision", "loss_scale", "batch_size", "eval_interval",
            "clip_grad_norm", "clip_grad_value", "early_stopping", "keep_best", "cuda_graph"});
}

namespace {

// A phase of a schedule: sync or local_sgd, for `steps` steps (the last runs to the end).
void read_phase(object_reader r, phase_config& phase, bool last) {
  if (read_enum(r, "policy", policy_names, phase.policy) &&
      (phase.policy == policy_kind::async || phase.policy == policy_kind::schedule))
    r.problem("policy", std::string("must be \"sync\" or \"local_sgd\" in a schedule, got \"") +
                            to_string(phase.policy) + "\"");
  if (!r.has("policy"))
    r.object_problem("needs a policy");
  if (last) {
    if (r.has("steps"))
      r.problem("steps", "the last phase runs to the end of training: leave steps out");
    r.skip("steps");
  } else if (!r.has("steps")) {
    r.object_problem("needs steps (every phase but the last)");
  } else {
    r.integer("steps", phase.steps, 1, INT64_C(1) << 40);
  }
  if (phase.policy == policy_kind::local_sgd) {
    r.integer("period", phase.period, 1, 1000000);
    r.boolean("average_momenta", phase.average_momenta);
    r.finish({"policy", "steps", "period", "average_momenta"});
  } else {
    r.finish({"policy", "steps"});
  }
}

// Pipeline keys, valid under every policy name so that the combination rules can say what is
// wrong (pipelines need sync: core/config/feature_rules) instead of calling them unknown.
void read_pipeline(object_reader& r, parallelism_config& p) {
  const bool stages_ok = r.integer("stages", p.stages, 1, 64);
  r.integer("micro_batches", p.micro_batches, 1, 1 << 16);
  read_enum(r, "schedule", schedule_names, p.schedule);
  if (!stages_ok)
    r.skip("split");
  else if (r.has("split") && p.stages == 1) {
    r.problem("split", "needs stages > 1");
    r.skip("split");
  } else
    r.word_or_strings("split", "balanced", p.split, static_cast<std::size_t>(p.stages - 1));
}

// local_sgd's outer optimizer: {"type": "sgd", "lr": 0.7, "momentum": 0.9, "nesterov": true}
// (DiLoCo's values by default), or "none" for the plain average.
void read_outer_optimizer(object_reader& r, outer_optimizer_config& o) {
  if (!r.has("outer_optimizer"))
    return;
  if (const auto* value = r.peek("outer_optimizer"); value != nullptr && value->is_string()) {
    if (*value != "none")
      r.problem("outer_optimizer",
                "must be \"none\" or an object such as {\"type\": \"sgd\", "
                "\"lr\": 0.7, \"momentum\": 0.9, \"nesterov\": true}, got " +
                    value->dump());
    r.skip("outer_optimizer");
    return;
  }
  auto outer = r.object("outer_optimizer");
  if (!outer.valid())
    return;
  std::string type = "sgd";
  outer.string(
      "type", type, [](const std::string& t) { return t == "sgd"; },
      "\"sgd\" (SGD with momentum, as DiLoCo)");
  outer.number("lr", o.lr, 0, true, 100, false);
  outer.number("momentum", o.momentum, 0, false, 1, true);
  outer.boolean("nesterov", o.nesterov);
  outer.finish({"type", "lr", "momentum", "nesterov"});
  o.enabled = true;
}

// The parallelism keys that only some policies read, and which.
struct policy_key {
  const char* key;
  const char* policies;
};
constexpr policy_key policy_keys[] = {{"period", "local_sgd"},
                                      {"average_momenta", "local_sgd"},
                                      {"outer_optimizer", "local_sgd"},
                                      {"fragments", "local_sgd"},
                                      {"fragment_overlap", "local_sgd"},
                                      {"fragment_mix", "local_sgd"},
                                      {"max_staleness", "async"},
                                      {"staleness_lr_scaling", "async"},
                                      {"ps_shards", "async"},
                                      {"compression", "local_sgd and async"},
                                      {"phases", "schedule"}};

// A key of another policy than the job's is named as such (the list of known keys would not
// say why it is refused), and skipped; `policy` nullopt (not a policy) skips them all.
void refuse_other_policies_keys(object_reader& r, std::optional<policy_kind> policy) {
  const std::string mine = policy ? to_string(*policy) : "";
  for (const auto& k : policy_keys) {
    const std::string owners = k.policies;
    // Whole words: "sync" is in "async".
    const bool own = (" " + owners + " ").find(" " + mine + " ") != std::string::npos;
    if (!r.has(k.key) || (policy && own))
      continue;
    if (policy) {
      const bool several = owners.find(" and ") != std::string::npos;
      std::string why =
          "is for " + std::string(several ? "policies " : "policy ") + owners + ", not " + mine;
      if (*policy == policy_kind::schedule && owners.find("local_sgd") != std::string::npos)
        why += " (a schedule's local_sgd phases take their period and average_momenta)";
      r.problem(k.key, why);
    }
    r.skip(k.key);
  }
}

}  // namespace

void read_parallelism(object_reader r, parallelism_config& p) {
  refuse_other_policies_keys(r, read_enum(r, "policy", policy_names, p.policy)
                                    ? std::optional<policy_kind>(p.policy)
                                    : std::nullopt);
  r.integer("replicas", p.replicas, 1, 256);
  r.integer("threads_per_replica", p.threads_per_replica, 1, 256);
  read_pipeline(r, p);
  if (p.policy == policy_kind::local_sgd) {
    r.integer("period", p.period, 1, 1000000);
    r.boolean("average_momenta", p.average_momenta);
    read_enum(r, "compression", compression_names, p.compression);
    read_outer_optimizer(r, p.outer_optimizer);
    r.integer("fragments", p.fragments, 1, 4096);
    r.integer("fragment_overlap", p.fragment_overlap, 0, 1000000);
    if (r.has("fragment_mix")) {
      double mix = 0.5;
      if (r.number("fragment_mix", mix, 0, true, 1, false))  // (0, 1]: 0 would never take it
        p.fragment_mix = mix;
    }
    r.finish({"policy", "replicas", "threads_per_replica", "stages", "micro_batches", "schedule",
              "split", "period", "average_momenta", "compression", "outer_optimizer", "fragments",
              "fragment_overlap", "fragment_mix"});
  } else if (p.policy == policy_kind::async) {
    r.optional_integer("max_staleness", p.max_staleness, 0, 1000000);
    r.boolean("staleness_lr_scaling", p.staleness_lr_scaling);
    read_enum(r, "compression", compression_names, p.compression);
    r.integer("ps_shards", p.ps_shards, 1, 256);
    r.finish({"policy", "replicas", "threads_per_replica", "stages", "micro_batches", "schedule",
              "split", "max_staleness", "staleness_lr_scaling", "compression", "ps_shards"});
  } else if (p.policy == policy_kind::schedule) {
    auto phases = r.object_array("phases", 1, 1000);
    if (!r.has("phases"))
      r.problem("phases",
                "a schedule needs its phases, e.g. [{\"policy\": \"sync\", \"steps\": "
                "500}, {\"policy\": \"local_sgd\", \"period\": 8}]");
    p.phases.resize(phases.size());
    for (std::size_t i = 0; i < phases.size(); ++i)
      read_phase(phases[i], p.phases[i], i + 1 == phases.size());
    r.finish({"policy", "replicas", "threads_per_replica", "stages", "micro_batches", "schedule",
              "split", "phases"});
  } else {
    r.finish({"policy", "replicas", "threads_per_replica", "stages", "micro_batches", "schedule",
              "split"});
  }
}

}  // namespace troupe
