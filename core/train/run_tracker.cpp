#include "core/train/run_tracker.hpp"

#include "core/train/confusion.hpp"

#include <algorithm>

namespace troupe {
namespace {

// final_train_loss averages the last steps' losses: one step's loss is too noisy to compare.
constexpr std::size_t loss_window = 50;

}  // namespace

run_tracker::run_tracker(int64_t workers, const step_rules& rules, jsonl_writer* metrics,
                         tracker_options options)
    : rules_(rules),
      metrics_(metrics),
      options_(std::move(options)),
      windows_([this](const nlohmann::json& record) { write(record); }) {
  workers_.resize(static_cast<std::size_t>(workers));
  for (int64_t r = 0; r < workers; ++r)
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

void run_tracker::write(const nlohmann::json& record) {
  if (metrics_ != nullptr)
    metrics_->write(record);
}

worker_report* run_tracker::worker(int64_t w) {
  if (w < 0 || w >= static_cast<int64_t>(workers_.size()))
    return nullptr;
  return &workers_[static_cast<std::size_t>(w)];
}

progress_update run_tracker::snapshot() const {
  progress_update p;
  p.step = completed_steps_;
  p.total_steps = rules_.total_steps();
  p.epoch = rules_.epoch_of(completed_steps_ - 1);
  p.loss = last_loss_;
  p.samples_per_s = last_samples_per_s_;
  p.samples = samples_;
  p.elapsed_s = elapsed_s();
  p.validation = options_.validation;
  p.accuracy = options_.validation ? validation_accuracy_ : test_accuracy_;
  p.metric = options_.metric;
  return p;
}

progress_update run_tracker::on_step_complete(int64_t step, const std::vector<step_part>& parts,
                                              double reduce_s) {
  const auto now = std::chrono::steady_clock::now();
  // The workers' own measure where they have one: their reports may arrive in blocks
  // (core/policy/step_release.hpp), several steps completing here at once.
  double step_s = 0;
  for (const auto& p : parts)
    step_s = std::max(step_s, p.span_s);
  if (step_s == 0)
    step_s = std::chrono::duration<double>(now - last_step_end_).count();
  last_step_end_ = now;
  int64_t samples = 0;
  int64_t summed = 0;
  double weighted_loss = 0;
  for (const auto& p : parts) {
    samples += p.samples;
    summed = std::max(summed, p.sum_rows);
    if (auto* w = worker(p.worker))
      w->samples += p.samples;
    weighted_loss += p.loss * static_cast<double>(p.samples);
  }
  last_loss_ = samples > 0 ? weighted_loss / static_cast<double>(samples) : 0;
  // The parts' losses are the reporters'; the step trained every row its sum held.
  if (summed > 0) {
    samples = summed;
    add_rows(step, samples);
  } else {
    add_rows(step, 0);  // the step's epoch has its entry, whichever batches the rows came from
    // An async push's rows belong to its pusher's batch, whose epoch may not be the step's.
    for (const auto& p : parts)
      add_rows(p.batch >= 0 ? p.batch : step, p.samples);
  }
  last_samples_per_s_ = step_s > 0 ? static_cast<double>(samples) / step_s : 0;
  last_step_s_ = step_s;
  samples_ += samples;
  completed_steps_ = step + 1;
  ahead_.erase(ahead_.begin(), ahead_.upper_bound(step));
  recent_losses_.push_back(last_loss_);
  if (recent_losses_.size() > loss_window)
    recent_losses_.pop_front();
  failures_.completed(step, elapsed_s());
  const double lr = options_.learning_rate ? options_.learning_rate(step) : 0.0;
  windows_.add(records::step{step, rules_.epoch_of(step), last_loss_, samples, last_samples_per_s_,
                             step_s, reduce_s, elapsed_s(), lr});
  if (metrics_ != nullptr)
    windows_.set_stride(options_.budget.stride_after(metrics_->bytes_written(), elapsed_s()));
  return snapshot();
}

void run_tracker::add_rows(int64_t step, int64_t rows) {
  const auto epoch = static_cast<std::size_t>(rules_.epoch_of(step));
  if (rows_per_epoch_.size() <= epoch)
    rows_per_epoch_.resize(epoch + 1, 0);
  rows_per_epoch_[epoch] += rows;
}

void run_tracker::recount(int64_t step, int64_t rows) {
  add_rows(step, rows);
  samples_ += rows;
}

void run_tracker::on_worker_step(int64_t worker_id, int64_t step, double compute_s, double comm_s,
                                 double apply_s, double data_wait_s) {
  auto* w = worker(worker_id);
  if (w == nullptr)
    return;
  w->steps += 1;
  w->compute_s += compute_s;
  w->comm_s += comm_s;
  w->apply_s += apply_s;
  w->data_wait_s += data_wait_s;
  if (options_.lockstep && step >= completed_steps_)
    ahead_.insert({step, {worker_id, compute_s, comm_s, apply_s, data_wait_s}});
  windows_.add(records::worker_step{step, worker_id, compute_s, comm_s, apply_s, data_wait_s});
}

std::vector<worker_report> run_tracker::completed_workers() const {
  auto workers = workers_;
  for (const auto& [step, a] : ahead_) {
    auto& w = workers[static_cast<std::size_t>(a.worker)];
    w.steps -= 1;
    w.compute_s -= a.compute_s;
    w.comm_s -= a.comm_s;
    w.apply_s -= a.apply_s;
    w.data_wait_s -= a.data_wait_s;
  }
  return workers;
}

void run_tracker::on_loss_scale(int64_t worker_id, int64_t step, double scale,
                                int64_t skipped_steps) {
  auto* w = worker(worker_id);
  if (w == nullptr)
    return;
  if (scale != w->loss_scale)
    record(records::loss_scale{step, worker_id, scale, skipped_steps, 0.0});
  w->loss_scale = scale;
  w->skipped_steps = skipped_steps;
}

std::optional<progress_update> run_tracker::on_eval_shard(int64_t worker_id, int64_t step,
                                                          double loss_sum, double metric_sum,
                                                          int64_t count, double eval_s,
                                                          int64_t expected,
                                                          const std::vector<int64_t>& confusion) {
  if (auto* w = worker(worker_id))
    w->eval_s += eval_s;
  auto& round = evals_[step];
  // Shards of another split (a lost worker's evaluation done again over the live ones) start
  // the round afresh: the set is counted once.
  if (round.expected != expected)
    round = eval_round{};
  round.expected = expected;
  round.loss_sum += loss_sum;
  round.metric_sum += metric_sum;
  round.count += count;
  add_counts(round.confusion, confusion);
  round.shards += 1;
  round.max_eval_s = std::max(round.max_eval_s, eval_s);
  if (round.shards < expected)
    return std::nullopt;
  const double n = static_cast<double>(std::max<int64_t>(round.count, 1));
  const double loss = round.loss_sum / n;
  const double accuracy = round.metric_sum / n;
  (options_.validation ? validation_loss_ : test_loss_) = loss;
  (options_.validation ? validation_accuracy_ : test_accuracy_) = accuracy;
  eval_s_ += round.max_eval_s;
  last_evaluated_ = std::max(step, last_evaluated_.value_or(step));
  const auto split = options_.validation ? "validation" : "test";
  write(to_json(records::eval{step, rules_.epoch_of(step), split, loss, accuracy, round.count,
                              round.max_eval_s, elapsed_s(), "", options_.metric}));
  if (!round.confusion.empty() && (!last_confusion_ || step >= last_confusion_->step))
    last_confusion_ = records::confusion{
        step,           split,  confusion_classes(round.confusion), round.confusion,
        /*weights=*/"", /*t=*/0};  // t: stamped when recorded
  evals_.erase(step);
  auto p = snapshot();
  p.evaluation = true;
  return p;
}

void run_tracker::record_last_confusion() {
  if (!last_confusion_)
    return;
  auto r = std::move(*last_confusion_);
  last_confusion_.reset();
  record(std::move(r));
}

void run_tracker::close_eval_round(int64_t step, bool redo) {
  auto it = evals_.find(step);
  if (it == evals_.end())
    return;
  const auto round = it->second;
  evals_.erase(it);
  if (redo || round.count == 0)
    return;
  const double n = static_cast<double>(round.count);
  auto record = to_json(records::eval{
      step, rules_.epoch_of(step), options_.validation ? "validation" : "test", round.loss_sum / n,
      round.metric_sum / n, round.count, round.max_eval_s, elapsed_s(), "", options_.metric});
  record["partial"] = true;
  write(record);
}

std::vector<int64_t> run_tracker::open_eval_rounds() const {
  std::vector<int64_t> steps;
  for (const auto& [step, round] : evals_)
    steps.push_back(step);
  return steps;
}

std::optional<std::pair<double, double>> run_tracker::latest_evaluation() const {
  const auto& loss = options_.validation ? validation_loss_ : test_loss_;
  const auto& accuracy = options_.validation ? validation_accuracy_ : test_accuracy_;
  if (!loss || !accuracy)
    return std::nullopt;
  return std::make_pair(*loss, *accuracy);
}

void run_tracker::on_test_evaluation(int64_t step, const std::string& weights, double loss_sum,
                                     double metric_sum, int64_t count, double eval_s) {
  const double n = static_cast<double>(std::max<int64_t>(count, 1));
  test_loss_ = loss_sum / n;
  test_accuracy_ = metric_sum / n;
  write(to_json(records::eval{step, rules_.epoch_of(step), "test", *test_loss_, *test_accuracy_,
                              count, eval_s, elapsed_s(), weights, options_.metric}));
}

void run_tracker::on_applied(int64_t worker_id, int64_t step, int64_t version, int64_t staleness) {
  staleness_histogram_[staleness] += 1;
  windows_.add(records::applied{worker_id, step + 1, version, staleness});
}

void run_tracker::on_waited(int64_t worker_id, int64_t step, double wait_s) {
  if (auto* w = worker(worker_id))
    w->wait_s += wait_s;
  windows_.add(records::waited{worker_id, step, wait_s});
}

void run_tracker::set_pipelines(int64_t pipelines, int64_t stages, double predicted_bubble) {
  stage_windows_.emplace(pipelines, stages);
  predicted_bubble_ = predicted_bubble;
}

void run_tracker::on_stage_timing(const stage_timing& t) {
  if (!stage_windows_)
    throw std::logic_error("run_tracker: a stage timing in a run without pipelines");
  for (const auto& x : stage_windows_->add(t)) {
    const auto& s = x.timing;
    on_worker_step(s.worker, s.step, s.busy_s, s.comm_s, s.apply_s, s.data_wait_s);
    auto* w = worker(s.worker);
    if (w == nullptr)
      continue;
    w->pipeline = x.pipeline;
    w->stage = x.stage;
    w->idle_s += x.idle_s;
    w->peak_live_activations = std::max(w->peak_live_activations, s.peak_live);
    windows_.add(records::stage_step{s.step, s.worker, x.pipeline, x.stage, s.busy_s, x.idle_s,
                                     s.peak_live});
  }
}

run_report run_tracker::report(const std::string& error, at::Tensor final_weights) const {
  run_report r;
  r.status = error.empty() ? run_status::succeeded : run_status::failed;
  r.error = error;
  r.wall_s = elapsed_s();
  r.train_s = std::max(0.0, r.wall_s - eval_s_);
  r.steps = completed_steps_;
  r.samples = samples_;
  r.rows_per_epoch = rows_per_epoch_;
  r.replicas = static_cast<int64_t>(workers_.size());
  if (!recent_losses_.empty()) {
    double sum = 0;
    for (double l : recent_losses_)
      sum += l;
    r.final_train_loss = sum / static_cast<double>(recent_losses_.size());
  }
  r.test_loss = test_loss_;
  r.metric = options_.metric;
  r.test_accuracy = test_accuracy_;
  r.validation_loss = validation_loss_;
  r.validation_accuracy = validation_accuracy_;
  r.workers = completed_workers();
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
  r.failures = failures_.summary();
  return r;
}

}  // namespace troupe
