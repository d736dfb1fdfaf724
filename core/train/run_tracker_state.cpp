// A run tracker's figures in a checkpoint: a resumed run's summary counts every step once and
// its clock goes on from where the checkpoint left it.
#include "core/train/run_tracker.hpp"
#include "core/train/saved_count.hpp"

namespace troupe {
namespace {

nlohmann::json optional_json(const std::optional<double>& x) {
  return x ? nlohmann::json(*x) : nlohmann::json();
}

std::optional<double> optional_number(const nlohmann::json& j) {
  return j.is_null() ? std::nullopt : std::optional<double>(j.get<double>());
}

nlohmann::json save_worker(const worker_report& w) {
  return {{"steps", w.steps},
          {"samples", w.samples},
          {"compute_s", w.compute_s},
          {"comm_s", w.comm_s},
          {"apply_s", w.apply_s},
          {"eval_s", w.eval_s},
          {"wait_s", w.wait_s},
          {"idle_s", w.idle_s},
          {"peak", w.peak_live_activations},
          {"data_wait_s", w.data_wait_s}};
}

void restore_worker(const nlohmann::json& j, worker_report& w) {
  w.steps = saved_count(j.at("steps"), "steps");
  w.samples = saved_count(j.at("samples"), "samples");
  w.compute_s = j.at("compute_s").get<double>();
  w.comm_s = j.at("comm_s").get<double>();
  w.apply_s = j.at("apply_s").get<double>();
  w.eval_s = j.at("eval_s").get<double>();
  w.wait_s = j.at("wait_s").get<double>();
  w.idle_s = j.at("idle_s").get<double>();
  w.peak_live_activations = saved_count(j.at("peak"), "peak");
  w.data_wait_s = j.value("data_wait_s", 0.0);  // absent from checkpoints before it was kept
}

}  // namespace

nlohmann::json run_tracker::save() const {
  nlohmann::json workers = nlohmann::json::array();
  for (const auto& w : completed_workers())
    workers.push_back(save_worker(w));
  nlohmann::json staleness = nlohmann::json::array();
  for (const auto& [k, n] : staleness_histogram_)
    staleness.push_back({k, n});
  nlohmann::json saved = {{"completed_steps", completed_steps_},
                          {"samples", samples_},
                          {"rows_per_epoch", rows_per_epoch_},
                          {"last_loss", last_loss_},
                          {"recent_losses", recent_losses_},
                          {"workers", workers},
                          {"staleness", staleness},
                          {"metrics_stride", options_.budget.stride()}};
  add_evaluation_to(saved);  // and the clock
  if (!failures_.empty())
    saved["failures"] = failures_.save();
  return saved;
}

void run_tracker::add_evaluation_to(nlohmann::json& saved) const {
  saved["elapsed_s"] = elapsed_s();
  saved["eval_s"] = eval_s_;
  saved["test_loss"] = optional_json(test_loss_);
  saved["test_accuracy"] = optional_json(test_accuracy_);
  saved["validation_loss"] = optional_json(validation_loss_);
  saved["validation_accuracy"] = optional_json(validation_accuracy_);
  saved["last_evaluated"] = last_evaluated_ ? nlohmann::json(*last_evaluated_) : nlohmann::json();
  auto& workers = saved.at("workers");
  for (std::size_t i = 0; i < workers_.size() && i < workers.size(); ++i)
    workers[i]["eval_s"] = workers_[i].eval_s;
}

void run_tracker::restore(const nlohmann::json& saved) {
  const auto elapsed = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(saved.at("elapsed_s").get<double>()));
  start_ = std::chrono::steady_clock::now() - elapsed;
  last_step_end_ = std::chrono::steady_clock::now();
  completed_steps_ = saved_count(saved.at("completed_steps"), "completed_steps");
  samples_ = saved_count(saved.at("samples"), "samples");
  // Checkpoints written before the rows were counted hold none: the count starts there.
  rows_per_epoch_ = saved.contains("rows_per_epoch")
                        ? saved_counts(saved.at("rows_per_epoch"), "rows_per_epoch")
                        : std::vector<int64_t>{};
  eval_s_ = saved.at("eval_s").get<double>();
  last_loss_ = saved.at("last_loss").get<double>();
  recent_losses_ = saved.at("recent_losses").get<std::deque<double>>();
  test_loss_ = optional_number(saved.at("test_loss"));
  test_accuracy_ = optional_number(saved.at("test_accuracy"));
  validation_loss_ = optional_number(saved.at("validation_loss"));
  validation_accuracy_ = optional_number(saved.at("validation_accuracy"));
  const auto& last = saved.at("last_evaluated");
  last_evaluated_ =
      last.is_null() ? std::nullopt : std::optional<int64_t>(saved_count(last, "last_evaluated"));
  const auto& workers = saved.at("workers");
  if (workers.size() != workers_.size())
    throw std::runtime_error("the checkpoint's tracker has " + std::to_string(workers.size()) +
                             " workers, the run " + std::to_string(workers_.size()));
  for (std::size_t i = 0; i < workers_.size(); ++i)
    restore_worker(workers[i], workers_[i]);
  ahead_.clear();
  staleness_histogram_.clear();
  for (const auto& entry : saved.at("staleness"))
    staleness_histogram_[saved_count(entry.at(0), "staleness")] =
        saved_count(entry.at(1), "staleness");
  if (saved.contains("failures"))
    failures_.restore(saved.at("failures"));
  // Checkpoints from before the metrics budget have no stride: theirs was 1.
  if (saved.contains("metrics_stride")) {
    options_.budget.restore_stride(saved_count(saved.at("metrics_stride"), "metrics_stride"));
    windows_.set_stride(options_.budget.stride());
  }
}

}  // namespace troupe
