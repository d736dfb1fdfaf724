// Pipeline schedules as pure functions: for P stages, M micro-batches and a schedule kind, the
// ordered list of operations (forward m, backward m) each stage executes in one training step.
// A stage actor runs its list front to back, each operation as soon as its input has arrived
// (the activation from stage s-1 for a forward, the gradient from stage s+1 for a backward).
//
// gpipe: every forward, then every backward (a stage holds all M activations at the flush).
// 1f1b:  min(P-s-1, M) warm-up forwards, then alternating forward/backward, then the remaining
//        backwards, so stage s never holds more than P-s live activations (PipeDream-Flush).
// Both flush at the end of the step: the optimizer steps once, after every backward.
#pragma once

#include "core/job/job_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

struct pipeline_op {
  enum class kind { forward, backward };
  kind what = kind::forward;
  int64_t micro = 0;

  bool operator==(const pipeline_op& other) const {
    return what == other.what && micro == other.micro;
  }
};

/// The operations of every stage, by stage. Requires stages >= 1 and micro_batches >= 1.
std::vector<std::vector<pipeline_op>> make_pipeline_schedule(int64_t stages, int64_t micro_batches,
                                                             pipeline_schedule_kind kind);

/// The idle fraction of an ideal pipeline (equal stages, F and B uniform): (P-1)/(M+P-1).
double predicted_bubble_fraction(int64_t stages, int64_t micro_batches);

/// What executing a schedule takes when each forward costs `forward_cost` and each backward
/// `backward_cost` time units on every stage and messages are free.
struct pipeline_timeline {
  double makespan = 0;
  std::vector<double> busy;                ///< by stage
  std::vector<double> idle;                ///< by stage: makespan - busy
  std::vector<int64_t> peak_live;          ///< by stage: most activations held at once
  std::vector<std::vector<double>> start;  ///< by stage, by op: when it began
  double bubble_fraction() const;
};

/// Runs the schedule as the stage actors would (each op in list order, once its dependency is
/// done). Throws std::invalid_argument if it deadlocks or an op is malformed (a backward before
/// its forward, a micro-batch twice or missing).
pipeline_timeline simulate_pipeline(const std::vector<std::vector<pipeline_op>>& schedule,
                                    int64_t micro_batches, double forward_cost = 1.0,
                                    double backward_cost = 1.0);

}  // namespace troupe
