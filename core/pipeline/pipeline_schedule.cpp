#include "core/pipeline/pipeline_schedule.hpp"

#include <algorithm>
#include <stdexcept>

namespace troupe {

const char* to_string(pipeline_schedule_kind kind) {
  return kind == pipeline_schedule_kind::gpipe ? "gpipe" : "1f1b";
}

std::vector<std::vector<pipeline_op>> make_pipeline_schedule(int64_t stages, int64_t micro_batches,
                                                             pipeline_schedule_kind kind) {
  if (stages < 1 || micro_batches < 1)
    throw std::invalid_argument("a pipeline needs at least one stage and one micro-batch");
  using op = pipeline_op;
  std::vector<std::vector<op>> schedule(static_cast<std::size_t>(stages));
  for (int64_t s = 0; s < stages; ++s) {
    auto& ops = schedule[static_cast<std::size_t>(s)];
    if (kind == pipeline_schedule_kind::gpipe) {
      for (int64_t m = 0; m < micro_batches; ++m)
        ops.push_back({op::kind::forward, m});
      for (int64_t m = 0; m < micro_batches; ++m)
        ops.push_back({op::kind::backward, m});
      continue;
    }
    // The deeper the stage, the sooner its first backward can arrive: stage s needs P-s-1
    // forwards in flight before the gradient of micro-batch 0 comes back.
    const int64_t warmup = std::min(stages - s - 1, micro_batches);
    int64_t next_forward = 0;
    int64_t next_backward = 0;
    for (; next_forward < warmup; ++next_forward)
      ops.push_back({op::kind::forward, next_forward});
    for (; next_forward < micro_batches; ++next_forward, ++next_backward) {
      ops.push_back({op::kind::forward, next_forward});
      ops.push_back({op::kind::backward, next_backward});
    }
    for (; next_backward < micro_batches; ++next_backward)
      ops.push_back({op::kind::backward, next_backward});
  }
  return schedule;
}

double predicted_bubble_fraction(int64_t stages, int64_t micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

double pipeline_timeline::bubble_fraction() const {
  if (makespan <= 0 || busy.empty())
    return 0;
  double total_idle = 0;
  for (double i : idle)
    total_idle += i;
  return total_idle / (makespan * static_cast<double>(busy.size()));
}

namespace {

// Each stage's list must do every micro-batch's forward once, then later its backward once.
void check_well_formed(const std::vector<std::vector<pipeline_op>>& schedule,
                       int64_t micro_batches) {
  for (std::size_t s = 0; s < schedule.size(); ++s) {
    std::vector<int> forwards(static_cast<std::size_t>(micro_batches), 0);
    std::vector<int> backwards(static_cast<std::size_t>(micro_batches), 0);
    for (const auto& o : schedule[s]) {
      if (o.micro < 0 || o.micro >= micro_batches)
        throw std::invalid_argument("stage " + std::to_string(s) + ": micro-batch " +
                                    std::to_string(o.micro) + " out of range");
      const auto m = static_cast<std::size_t>(o.micro);
      if (o.what == pipeline_op::kind::forward) {
        if (forwards[m]++ > 0)
          throw std::invalid_argument("stage " + std::to_string(s) + ": forward " +
                                      std::to_string(o.micro) + " twice");
      } else {
        if (forwards[m] == 0)
          throw std::invalid_argument("stage " + std::to_string(s) + ": backward " +
                                      std::to_string(o.micro) + " before its forward");
        if (backwards[m]++ > 0)
          throw std::invalid_argument("stage " + std::to_string(s) + ": backward " +
                                      std::to_string(o.micro) + " twice");
      }
    }
    for (int64_t m = 0; m < micro_batches; ++m)
      if (backwards[static_cast<std::size_t>(m)] == 0)
        throw std::invalid_argument("stage " + std::to_string(s) + ": micro-batch " +
                                    std::to_string(m) + " is never run backward");
  }
}

}  // namespace

pipeline_timeline simulate_pipeline(const std::vector<std::vector<pipeline_op>>& schedule,
                                    int64_t micro_batches, double forward_cost,
                                    double backward_cost) {
  check_well_formed(schedule, micro_batches);
  const auto stages = schedule.size();
  const auto m_count = static_cast<std::size_t>(micro_batches);
  constexpr double not_yet = -1;
  // End times of each (stage, micro-batch) forward and backward; not_yet until simulated.
  std::vector<std::vector<double>> f_end(stages, std::vector<double>(m_count, not_yet));
  std::vector<std::vector<double>> b_end(stages, std::vector<double>(m_count, not_yet));
  std::vector<std::size_t> next(stages, 0);
  std::vector<double> free_at(stages, 0);
  std::vector<int64_t> live(stages, 0);
  pipeline_timeline t;
  t.busy.assign(stages, 0);
  t.peak_live.assign(stages, 0);
  t.start.resize(stages);
  std::size_t remaining = 0;
  for (const auto& ops : schedule)
    remaining += ops.size();
  while (remaining > 0) {
    bool progressed = false;
    for (std::size_t s = 0; s < stages; ++s) {
      while (next[s] < schedule[s].size()) {
        const auto& o = schedule[s][next[s]];
        const auto m = static_cast<std::size_t>(o.micro);
        const bool forward = o.what == pipeline_op::kind::forward;
        // A forward needs the previous stage's activation, a backward the next stage's gradient.
        double ready = 0;
        if (forward && s > 0)
          ready = f_end[s - 1][m];
        else if (!forward && s + 1 < stages)
          ready = b_end[s + 1][m];
        if (ready == not_yet)
          break;
        const double begin = std::max(ready, free_at[s]);
        const double cost = forward ? forward_cost : backward_cost;
        t.start[s].push_back(begin);
        free_at[s] = begin + cost;
        t.busy[s] += cost;
        (forward ? f_end : b_end)[s][m] = free_at[s];
        live[s] += forward ? 1 : -1;
        t.peak_live[s] = std::max(t.peak_live[s], live[s]);
        ++next[s];
        --remaining;
        progressed = true;
      }
    }
    if (!progressed)
      throw std::invalid_argument("the schedule deadlocks: no stage can run its next operation");
  }
  for (double f : free_at)
    t.makespan = std::max(t.makespan, f);
  for (double b : t.busy)
    t.idle.push_back(t.makespan - b);
  return t;
}

}  // namespace troupe
