#include "core/train/run_tracker.hpp"

namespace troupe {
namespace {

// final_train_loss averages the last steps' losses: one step's loss is too noisy to compare.
constexpr std::size_t loss_window = 50;

}  // namespace

bool should_evaluate(int64_t step, int64_t total_steps, int64_t steps_per_epoch,
                     int64_t eval_interval) {
  if (step + 1 >= total_steps)
    return true;
  const int64_t every = eval_interval > 0 ? eval_interval : steps_per_epoch;
  return every > 0 && (step + 1) % every == 0;
}

run_tracker::run_tracker(int64_t replicas, int64_t total_steps, int64_t steps_per_epoch,
                         jsonl_writer* metrics)
    : total_steps_(total_steps), steps_per_epoch_(steps_per_epoch), metrics_(metrics) {
  workers_.resize(static_cast<std::size_t>(replicas));
  for (int64_t r = 0; r < replicas; ++r)
    workers_[static_cast<std::size_t>(r)].rank = r;
  start();
}

void run_tracker::start() {
  start_ = std::chrono::steady_clock::now();
  last_step_end_ = start_;
}

double run_tracker::elapsed_s() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

progress_update run_tracker::snapshot() const {
  progress_update p;
  p.step = completed_steps_;
  p.total_steps = total_steps_;
  p.epoch = steps_per_epoch_ > 0 ? (completed_steps_ - 1) / steps_per_epoch_ : 0;
  p.loss = last_loss_;
  p.samples_per_s = last_samples_per_s_;
  p.elapsed_s = elapsed_s();
  p.test_accuracy = test_accuracy_;
  return p;
}

progress_update run_tracker::on_step_complete(int64_t step, const std::vector<step_part>& parts,
                                              double reduce_s) {
  const auto now = std::chrono::steady_clock::now();
  const double step_s = std::chrono::duration<double>(now - last_step_end_).count();
  last_step_end_ = now;
  int64_t samples = 0;
  double weighted_loss = 0;
  for (const auto& p : parts) {
    samples += p.samples;
    if (p.worker >= 0 && p.worker < static_cast<int64_t>(workers_.size()))
      workers_[static_cast<std::size_t>(p.worker)].samples += p.samples;
    weighted_loss += p.loss * static_cast<double>(p.samples);
  }
  last_loss_ = samples > 0 ? weighted_loss / static_cast<double>(samples) : 0;
  last_samples_per_s_ = step_s > 0 ? static_cast<double>(samples) / step_s : 0;
  samples_ += samples;
  completed_steps_ = step + 1;
  recent_losses_.push_back(last_loss_);
  if (recent_losses_.size() > loss_window)
    recent_losses_.pop_front();
  if (metrics_ != nullptr)
    metrics_->write({{"event", "step"},
                     {"step", step},
                     {"epoch", steps_per_epoch_ > 0 ? step / steps_per_epoch_ : 0},
                     {"loss", last_loss_},
                     {"samples", samples},
                     {"samples_per_s", last_samples_per_s_},
                     {"step_s", step_s},
                     {"reduce_s", reduce_s},
                     {"t", elapsed_s()}});
  return snapshot();
}

void run_tracker::on_worker_step(int64_t worker, int64_t step, double compute_s, double comm_s,
                                 double apply_s) {
  if (worker < 0 || worker >= static_cast<int64_t>(workers_.size()))
    return;
  auto& w = workers_[static_cast<std::size_t>(worker)];
  w.steps += 1;
  w.compute_s += compute_s;
  w.comm_s += comm_s;
  w.apply_s += apply_s;
  if (metrics_ != nullptr)
    metrics_->write({{"event", "worker_step"},
                     {"step", step},
                     {"worker", worker},
                     {"compute_s", compute_s},
                     {"comm_s", comm_s},
                     {"apply_s", apply_s}});
}

std::optional<progress_update> run_tracker::on_eval_shard(int64_t worker, int64_t step,
                                                          double loss_sum, int64_t correct,
                                                          int64_t count, double eval_s,
                                                          int64_t expected) {
  if (worker >= 0 && worker < static_cast<int64_t>(workers_.size()))
    workers_[static_cast<std::size_t>(worker)].eval_s += eval_s;
  auto& round = evals_[step];
  round.loss_sum += loss_sum;
  round.correct += correct;
  round.count += count;
  round.shards += 1;
  round.max_eval_s = std::max(round.max_eval_s, eval_s);
  if (round.shards < expected)
    return std::nullopt;
  const double n = static_cast<double>(std::max<int64_t>(round.count, 1));
  test_loss_ = round.loss_sum / n;
  test_accuracy_ = static_cast<double>(round.correct) / n;
  eval_s_ += round.max_eval_s;
  if (metrics_ != nullptr)
    metrics_->write({{"event", "eval"},
                     {"step", step},
                     {"epoch", steps_per_epoch_ > 0 ? step / steps_per_epoch_ : 0},
                     {"test_loss", *test_loss_},
                     {"test_accuracy", *test_accuracy_},
                     {"samples", round.count},
                     {"eval_s", round.max_eval_s},
                     {"t", elapsed_s()}});
  evals_.erase(step);
  auto p = snapshot();
  p.evaluation = true;
  return p;
}

void run_tracker::on_applied(int64_t worker, int64_t step, int64_t version, int64_t staleness) {
  staleness_histogram_[staleness] += 1;
  if (metrics_ != nullptr)
    metrics_->write({{"event", "applied"},
                     {"worker", worker},
                     {"clock", step + 1},
                     {"version", version},
                     {"staleness", staleness}});
}

void run_tracker::on_waited(int64_t worker, int64_t step, double wait_s) {
  if (worker >= 0 && worker < static_cast<int64_t>(workers_.size()))
    workers_[static_cast<std::size_t>(worker)].wait_s += wait_s;
  if (metrics_ != nullptr)
    metrics_->write({{"event", "waited"}, {"worker", worker}, {"clock", step}, {"wait_s", wait_s}});
}

void run_tracker::on_stage_step(int64_t worker, int64_t pipeline, int64_t stage, int64_t step,
                                double busy_s, double idle_s, int64_t peak_live) {
  if (worker < 0 || worker >= static_cast<int64_t>(workers_.size()))
    return;
  auto& w = workers_[static_cast<std::size_t>(worker)];
  w.pipeline = pipeline;
  w.stage = stage;
  w.idle_s += idle_s;
  w.peak_live_activations = std::max(w.peak_live_activations, peak_live);
  if (metrics_ != nullptr)
    metrics_->write({{"event", "stage_step"},
                     {"step", step},
                     {"worker", worker},
                     {"pipeline", pipeline},
                     {"stage", stage},
                     {"busy_s", busy_s},
                     {"idle_s", idle_s},
                     {"peak_live_activations", peak_live}});
}

void run_tracker::record_event(nlohmann::json record) {
  if (metrics_ == nullptr)
    return;
  record["t"] = elapsed_s();
  metrics_->write(record);
}

run_report run_tracker::report(const std::string& error, at::Tensor final_weights) const {
  run_report r;
  r.status = error.empty() ? "succeeded" : "failed";
  r.error = error;
  r.wall_s = elapsed_s();
  r.train_s = std::max(0.0, r.wall_s - eval_s_);
  r.steps = completed_steps_;
  r.samples = samples_;
  r.replicas = static_cast<int64_t>(workers_.size());
  if (!recent_losses_.empty()) {
    double sum = 0;
    for (double l : recent_losses_)
      sum += l;
    r.final_train_loss = sum / static_cast<double>(recent_losses_.size());
  }
  r.test_loss = test_loss_;
  r.test_accuracy = test_accuracy_;
  r.workers = workers_;
  r.staleness_histogram = staleness_histogram_;
  double busy = 0, idle = 0;
  for (const auto& w : workers_)
    if (w.stage >= 0) {
      busy += w.compute_s;
      idle += w.idle_s;
    }
  if (busy + idle > 0)
    r.bubble_fraction = idle / (busy + idle);
  r.predicted_bubble_fraction = predicted_bubble_;
  r.final_weights = std::move(final_weights);
  return r;
}

}  // namespace troupe
