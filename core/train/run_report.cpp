#include "core/train/run_report.hpp"

namespace troupe {
namespace {

template <class T>
nlohmann::json optional_json(const std::optional<T>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json(nullptr);
}

}  // namespace

nlohmann::json to_json(const worker_report& w, double wall_s) {
  const double busy = w.compute_s + w.comm_s + w.apply_s;
  nlohmann::json j = {{"rank", w.rank},
                      {"wait_s", w.wait_s},
                      {"wait_fraction", wall_s > 0 ? w.wait_s / wall_s : 0.0},
                      {"steps", w.steps},
                      {"samples", w.samples},
                      {"compute_s", w.compute_s},
                      {"comm_s", w.comm_s},
                      {"apply_s", w.apply_s},
                      {"eval_s", w.eval_s},
                      {"data_wait_s", w.data_wait_s},
                      {"samples_per_s", busy > 0 ? static_cast<double>(w.samples) / busy : 0.0}};
  if (w.stage >= 0) {
    j["pipeline"] = w.pipeline;
    j["stage"] = w.stage;
    j["idle_s"] = w.idle_s;
    j["bubble_fraction"] = w.compute_s + w.idle_s > 0 ? w.idle_s / (w.compute_s + w.idle_s) : 0.0;
    j["peak_live_activations"] = w.peak_live_activations;
  }
  if (w.loss_scale > 0) {
    j["loss_scale"] = w.loss_scale;
    j["skipped_steps"] = w.skipped_steps;
  }
  return j;
}

nlohmann::json to_json(const run_report& r) {
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& w : r.workers)
    workers.push_back(to_json(w, r.wall_s));
  nlohmann::json j = {{"status", to_string(r.status)},
                      {"wall_s", r.wall_s},
                      {"train_s", r.train_s},
                      {"steps", r.steps},
                      {"samples", r.samples},
                      {"rows_per_epoch", r.rows_per_epoch},
                      {"samples_per_s", r.samples_per_s()},
                      {"final_train_loss", optional_json(r.final_train_loss)},
                      {"test_loss", optional_json(r.test_loss)},
                      {"test_" + r.metric, optional_json(r.test_accuracy)},
                      {"replicas", r.replicas},
                      {"workers", workers}};
  if (r.skipped_inputs > 0)
    j["skipped_inputs"] = r.skipped_inputs;
  if (r.validation_loss) {
    j["validation_loss"] = *r.validation_loss;
    j["validation_" + r.metric] = optional_json(r.validation_accuracy);
  }
  if (r.best_step)
    j["best"] = {
        {"step", *r.best_step}, {"metric", r.best_metric}, {"value", optional_json(r.best_value)}};
  if (r.stopped_early_at)
    j["stopped_early_at"] = *r.stopped_early_at;
  if (!r.staleness_histogram.empty()) {
    nlohmann::json histogram = nlohmann::json::object();
    for (const auto& [staleness, count] : r.staleness_histogram)
      histogram[std::to_string(staleness)] = count;
    j["staleness_histogram"] = histogram;
  }
  if (!r.members.empty()) {
    nlohmann::json members = nlohmann::json::array();
    for (const auto& m : r.members) {
      nlohmann::json member = {{"member", m.member},
                               {"seed", m.seed},
                               {"lr", m.lr},
                               {"test_loss", optional_json(m.test_loss)},
                               {"test_accuracy", optional_json(m.test_accuracy)}};
      if (m.validation_loss) {
        member["validation_loss"] = *m.validation_loss;
        member["validation_accuracy"] = optional_json(m.validation_accuracy);
      }
      members.push_back(member);
    }
    j["members"] = members;
    j["ensemble_test_accuracy"] = optional_json(r.test_accuracy);
  }
  if (r.bubble_fraction)
    j["bubble_fraction"] = *r.bubble_fraction;
  if (r.predicted_bubble_fraction)
    j["predicted_bubble_fraction"] = *r.predicted_bubble_fraction;
  if (r.failures.is_object())
    for (const auto& [key, value] : r.failures.items())
      j[key] = value;
  if (!r.error.empty())
    j["error"] = r.error;
  return j;
}

}  // namespace troupe
