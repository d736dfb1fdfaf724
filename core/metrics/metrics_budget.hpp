// Keeps an hour-long run's metrics.jsonl to about 100 MB. A fast run writes a step record and
// one record per worker for every step: at 1,000 steps/s with 2 workers that is 0.5 MB/s, 1.9 GB
// an hour. The budget allows a fixed 8 MB plus 24 KB per second of run (94 MB after an hour);
// while the file is over it and grew faster than 24 KB/s over the last 5 s or more (since the
// last change), the stride doubles: from then on the per-step records (step,
// worker_step, stage_step, applied, waited) are written once per `stride` steps, each summing
// the steps it stands for (core/train/record_windows.hpp). Evaluations, checkpoints and other
// events are always written as they happen. A pure state machine.
#pragma once

#include <cstddef>
#include <cstdint>

namespace troupe {

class metrics_budget {
 public:
  static constexpr double default_fixed_bytes = 8e6;
  static constexpr double default_bytes_per_s = 24e3;
  static constexpr int64_t max_stride = int64_t{1} << 20;
  /// The least time a stride's rate is measured over before it may double again.
  static constexpr double default_settle_s = 5;

  metrics_budget() = default;
  metrics_budget(double fixed_bytes, double bytes_per_s, double settle_s = default_settle_s);

  /// The file holds `bytes` after `elapsed_s` seconds of run: the stride from now on (it never
  /// shrinks, so the file reads as windows that only grow).
  int64_t stride_after(std::size_t bytes, double elapsed_s);
  int64_t stride() const { return stride_; }
  /// Carries a resumed run's stride on.
  void restore_stride(int64_t stride);
  /// The bytes allowed after `elapsed_s` seconds.
  double allowance(double elapsed_s) const { return fixed_bytes_ + bytes_per_s_ * elapsed_s; }

 private:
  double fixed_bytes_ = default_fixed_bytes;
  double bytes_per_s_ = default_bytes_per_s;
  double settle_s_ = default_settle_s;
  int64_t stride_ = 1;
  // Where the current stride began: its rate is measured from there.
  double changed_at_s_ = 0;
  double bytes_at_change_ = 0;
};

}  // namespace troupe
