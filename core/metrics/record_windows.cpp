#include "core/metrics/record_windows.hpp"

#include <algorithm>

namespace troupe {
namespace {

// A window's record: its summed record with how many it stands for under `key`.
template <class Record>
void write_counted(const record_windows::sink& write, const Record& r, const char* key, int64_t n) {
  auto j = to_json(r);
  j[key] = n;
  write(j);
}

}  // namespace

record_windows::record_windows(sink write) : write_(std::move(write)) {}

void record_windows::set_stride(int64_t stride) {
  if (stride == stride_)
    return;
  flush();
  stride_ = std::max<int64_t>(1, stride);
}

void record_windows::add(const records::step& r) {
  if (stride_ == 1) {
    write_(to_json(r));
    return;
  }
  auto& w = step_;
  const auto samples = w.sum.samples + r.samples;
  const auto step_s = w.sum.step_s + r.step_s;
  const auto reduce_s = w.sum.reduce_s + r.reduce_s;
  w.loss_x_samples += r.loss * static_cast<double>(r.samples);
  w.sum = r;
  w.sum.samples = samples;
  w.sum.step_s = step_s;
  w.sum.reduce_s = reduce_s;
  if (++w.steps == stride_)
    write_step();
}

void record_windows::write_step() {
  auto& w = step_;
  if (w.steps == 0)
    return;
  auto r = w.sum;
  r.loss = r.samples > 0 ? w.loss_x_samples / static_cast<double>(r.samples) : r.loss;
  r.samples_per_s = r.step_s > 0 ? static_cast<double>(r.samples) / r.step_s : 0;
  write_counted(write_, r, "steps", w.steps);
  w = step_window{};
}

void record_windows::add(const records::worker_step& r) {
  if (stride_ == 1) {
    write_(to_json(r));
    return;
  }
  auto& w = workers_[r.worker];
  const auto sum = w.sum;
  w.sum = r;
  w.sum.compute_s += sum.compute_s;
  w.sum.comm_s += sum.comm_s;
  w.sum.apply_s += sum.apply_s;
  w.sum.data_wait_s += sum.data_wait_s;
  if (++w.n == stride_) {
    write_counted(write_, w.sum, "steps", w.n);
    workers_.erase(r.worker);
  }
}

void record_windows::add(const records::stage_step& r) {
  if (stride_ == 1) {
    write_(to_json(r));
    return;
  }
  auto& w = stages_[r.worker];
  const auto sum = w.sum;
  w.sum = r;
  w.sum.busy_s += sum.busy_s;
  w.sum.idle_s += sum.idle_s;
  w.sum.peak_live_activations = std::max(sum.peak_live_activations, r.peak_live_activations);
  if (++w.n == stride_) {
    write_counted(write_, w.sum, "steps", w.n);
    stages_.erase(r.worker);
  }
}

void record_windows::add(const records::applied& r) {
  if (stride_ == 1) {
    write_(to_json(r));
    return;
  }
  auto& w = applied_[r.worker];
  auto& s = w.by_staleness[r.staleness];
  s.sum = r;
  ++s.n;
  if (++w.pushes == stride_)
    write_applied(r.worker);
}

void record_windows::write_applied(int64_t worker) {
  for (const auto& [staleness, s] : applied_[worker].by_staleness) {
    write_counted(write_, s.sum, "count", s.n);
  }
  applied_.erase(worker);
}

void record_windows::add(const records::waited& r) {
  if (stride_ == 1) {
    write_(to_json(r));
    return;
  }
  auto& w = waited_[r.worker];
  const double wait_s = w.sum.wait_s + r.wait_s;
  w.sum = r;
  w.sum.wait_s = wait_s;
  if (++w.n == stride_) {
    write_counted(write_, w.sum, "count", w.n);
    waited_.erase(r.worker);
  }
}

void record_windows::flush() {
  write_step();
  for (auto& [worker, w] : workers_) {
    write_counted(write_, w.sum, "steps", w.n);
  }
  workers_.clear();
  for (auto& [worker, w] : stages_) {
    write_counted(write_, w.sum, "steps", w.n);
  }
  stages_.clear();
  std::vector<int64_t> pushing;
  for (const auto& [worker, w] : applied_)
    pushing.push_back(worker);
  for (auto worker : pushing)
    write_applied(worker);
  for (auto& [worker, w] : waited_) {
    write_counted(write_, w.sum, "count", w.n);
  }
  waited_.clear();
}

}  // namespace troupe
