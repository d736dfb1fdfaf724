// The per-step records of a run (step, worker_step, stage_step, applied, waited), written as
// they come while the stride is 1, or summed over windows of `stride` steps when the metrics
// budget (metrics_budget.hpp) asks for fewer lines. A window's record is the record of its last
// step with the summed fields replaced and a count added:
//   step:        "steps": n; loss is the mean over the window's samples; samples, step_s and
//                reduce_s are sums; samples_per_s is samples / step_s
//   worker_step: "steps": n; compute_s, comm_s, apply_s are sums
//   stage_step:  "steps": n; busy_s and idle_s are sums, peak_live_activations the largest
//   applied:     one record per staleness value seen in a worker's window, "count": n
//   waited:      "count": n; wait_s is the sum
// Sums over all records therefore stay the run's totals whatever the stride.
//
// Thread safety: none; owned by the run tracker.
#pragma once

#include "core/metrics/records.hpp"

#include <nlohmann/json.hpp>

#include <functional>
#include <map>

namespace troupe {

class record_windows {
 public:
  using sink = std::function<void(const nlohmann::json&)>;
  explicit record_windows(sink write);

  /// Windows of `stride` steps from now on; open windows are written first.
  void set_stride(int64_t stride);
  int64_t stride() const { return stride_; }

  void add(const records::step& r);
  void add(const records::worker_step& r);
  void add(const records::stage_step& r);
  void add(const records::applied& r);
  void add(const records::waited& r);

  /// Writes every open window (the run ends, or the stride changes).
  void flush();

 private:
  struct step_window {
    int64_t steps = 0;
    double loss_x_samples = 0;
    records::step sum;
  };
  template <class Record>
  struct counted {
    int64_t n = 0;
    Record sum;
  };
  struct applied_window {
    int64_t pushes = 0;
    std::map<int64_t, counted<records::applied>> by_staleness;
  };

  void write_step();
  void write_applied(int64_t worker);

  sink write_;
  int64_t stride_ = 1;
  step_window step_;
  std::map<int64_t, counted<records::worker_step>> workers_;
  std::map<int64_t, counted<records::stage_step>> stages_;
  std::map<int64_t, applied_window> applied_;
  std::map<int64_t, counted<records::waited>> waited_;
};

}  // namespace troupe
