// Turns the stages' timings of a step into each stage's idle time: a pipeline's flush window
// runs from the earliest start to the latest finish among its stages, and a stage was idle for
// the part of that window it was not busy (the bubble plus message latency). Timings arrive in
// any order; a step's figures come out once every stage of every pipeline has reported.
//
// Thread safety: none; owned by the run tracker.
#pragma once

#include "core/train/stage_timing.hpp"

#include <cstdint>
#include <map>
#include <vector>

namespace troupe {

struct stage_idle {
  stage_timing timing;
  int64_t pipeline = 0;
  int64_t stage = 0;
  double idle_s = 0;
};

class stage_windows {
 public:
  /// Worker w is stage w % stages of pipeline w / stages.
  stage_windows(int64_t pipelines, int64_t stages);

  /// Keeps `t`; once its step is complete, returns every stage of it in worker order (and
  /// forgets the step), else nothing. Throws std::invalid_argument for a worker out of range
  /// or a second timing of the same worker and step.
  std::vector<stage_idle> add(const stage_timing& t);

 private:
  int64_t pipelines_;
  int64_t stages_;
  std::map<int64_t, std::map<int64_t, stage_timing>> steps_;  ///< step -> worker -> timing
};

}  // namespace troupe
