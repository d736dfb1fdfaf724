#include "core/metrics/records.hpp"

#include <limits>

namespace troupe {

const char* to_string(run_status x) {
  switch (x) {
    case run_status::succeeded:
      return "succeeded";
    case run_status::failed:
      return "failed";
    case run_status::not_started:
      return "not started";
    case run_status::stopped:
      return "stopped";
    case run_status::diverged:
      return "diverged";
  }
  return "?";
}

std::optional<run_status> parse_run_status(const std::string& text) {
  for (auto s : {run_status::succeeded, run_status::failed, run_status::not_started,
                 run_status::stopped, run_status::diverged})
    if (text == to_string(s))
      return s;
  return std::nullopt;
}

namespace records {

nlohmann::json to_json(const step& r) {
  return {{"event", step::event},
          {"step", r.step},
          {"epoch", r.epoch},
          {"loss", r.loss},
          {"samples", r.samples},
          {"samples_per_s", r.samples_per_s},
          {"step_s", r.step_s},
          {"reduce_s", r.reduce_s},
          {"t", r.t},
          {"lr", r.lr}};
}

nlohmann::json to_json(const worker_step& r) {
  return {{"event", worker_step::event}, {"step", r.step},     {"worker", r.worker},
          {"compute_s", r.compute_s},    {"comm_s", r.comm_s}, {"apply_s", r.apply_s},
          {"data_wait_s", r.data_wait_s}};
}

nlohmann::json to_json(const stage_step& r) {
  return {{"event", stage_step::event}, {"step", r.step},
          {"worker", r.worker},         {"pipeline", r.pipeline},
          {"stage", r.stage},           {"busy_s", r.busy_s},
          {"idle_s", r.idle_s},         {"peak_live_activations", r.peak_live_activations}};
}

nlohmann::json to_json(const eval& r) {
  nlohmann::json j = {{"event", eval::event},
                      {"step", r.step},
                      {"epoch", r.epoch},
                      {r.split + "_loss", r.loss},
                      {r.split + "_" + r.metric, r.accuracy},
                      {"samples", r.samples},
                      {"eval_s", r.eval_s},
                      {"t", r.t}};
  if (!r.weights.empty())
    j["weights"] = r.weights;
  return j;
}

nlohmann::json to_json(const member_eval& r) {
  return {{"event", member_eval::event},
          {"step", r.step},
          {"member", r.member},
          {r.split + "_loss", r.loss},
          {r.split + "_accuracy", r.accuracy},
          {"t", r.t}};
}

nlohmann::json to_json(const applied& r) {
  return {{"event", applied::event},
          {"worker", r.worker},
          {"clock", r.clock},
          {"version", r.version},
          {"staleness", r.staleness}};
}

nlohmann::json to_json(const waited& r) {
  return {{"event", waited::event}, {"worker", r.worker}, {"clock", r.clock}, {"wait_s", r.wait_s}};
}

nlohmann::json to_json(const phase& r) {
  return {{"event", phase::event}, {"step", r.step}, {"policy", r.policy}, {"t", r.t}};
}

nlohmann::json to_json(const failure& r) {
  return {{"event", failure::event}, {"error", r.error}, {"t", r.t}};
}

nlohmann::json to_json(const checkpoint& r) {
  nlohmann::json j = {{"event", checkpoint::event},
                      {"step", r.step},
                      {"bytes", r.bytes},
                      {"seconds", r.seconds},
                      {"t", r.t}};
  if (!r.error.empty())
    j["error"] = r.error;
  return j;
}

nlohmann::json to_json(const resumed& r) {
  return {{"event", resumed::event},
          {"step", r.step},
          {"path", r.path},
          {"skipped", r.skipped},
          {"t", r.t}};
}

nlohmann::json to_json(const node_lost& r) {
  return {{"event", node_lost::event},  {"node", r.node},     {"workers", r.workers},
          {"reason", r.reason},         {"step", r.step},     {"detection_s", r.detection_s},
          {"live_nodes", r.live_nodes}, {"unix_s", r.unix_s}, {"t", r.t}};
}

nlohmann::json to_json(const step_redone& r) {
  return {{"event", step_redone::event}, {"step", r.step}, {"epoch", r.epoch}, {"t", r.t}};
}

nlohmann::json to_json(const node_joined& r) {
  return {{"event", node_joined::event},
          {"node", r.node},
          {"workers", r.workers},
          {"step", r.step},
          {"state_bytes", r.state_bytes},
          {"epoch", r.epoch},
          {"t", r.t}};
}

std::vector<int64_t> class_rows(const confusion& r) {
  const auto k = static_cast<std::size_t>(r.classes);
  std::vector<int64_t> rows(k, 0);
  // Saturating: counts read back from a hand-edited metrics.jsonl may be anything int64 holds,
  // and a signed sum past it is undefined.
  for (std::size_t truth = 0; truth < k; ++truth)
    for (std::size_t p = 0; p < k; ++p)
      if (__builtin_add_overflow(rows[truth], r.counts.at(truth * k + p), &rows[truth]))
        rows[truth] = std::numeric_limits<int64_t>::max();
  return rows;
}

std::vector<std::optional<double>> per_class_accuracy(const confusion& r) {
  const auto rows = class_rows(r);
  std::vector<std::optional<double>> accuracy(rows.size());
  for (std::size_t truth = 0; truth < rows.size(); ++truth)
    if (rows[truth] > 0)
      accuracy[truth] = static_cast<double>(r.counts.at(truth * (rows.size() + 1))) /
                        static_cast<double>(rows[truth]);
  return accuracy;
}

nlohmann::json to_json(const loss_scale& r) {
  return {{"event", loss_scale::event},
          {"step", r.step},
          {"worker", r.worker},
          {"scale", r.scale},
          {"skipped_steps", r.skipped_steps},
          {"t", r.t}};
}

nlohmann::json to_json(const confusion& r) {
  auto accuracy = nlohmann::json::array();
  for (const auto& a : per_class_accuracy(r))
    accuracy.push_back(a ? nlohmann::json(*a) : nlohmann::json(nullptr));
  nlohmann::json j = {{"event", confusion::event},
                      {"step", r.step},
                      {"split", r.split},
                      {"classes", r.classes},
                      {"counts", r.counts},
                      {"accuracy", accuracy},
                      {"t", r.t}};
  if (!r.weights.empty())
    j["weights"] = r.weights;
  return j;
}

nlohmann::json to_json(const replicas_checked& r) {
  return {{"event", replicas_checked::event},
          {"workers", r.workers},
          {"step", r.step},
          {"epoch", r.epoch},
          {"sha256", r.sha256},
          {"t", r.t}};
}

}  // namespace records
}  // namespace troupe
