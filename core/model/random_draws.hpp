// Random numbers a model draws while it runs (dropout masks and the like), made each worker's
// own. LibTorch 1.13 draws them from one process-wide CPU generator, so replicas of one process
// would take their draws in whatever order their threads happen to run, and no two runs would
// agree. A forward pass that draws holds a seeded_draws: it takes a process-wide lock and seeds
// that generator with a number made from the job's seed, the worker and the step, so each
// worker's draws depend on nothing else. The price is that such forward passes take turns;
// backward passes (which reuse the masks) still run side by side.
//
// Thread safety: seeded_draws may be held by one thread at a time in a process (it is the lock).
#pragma once

#include <cstdint>
#include <mutex>

namespace troupe {

/// The seed of one forward pass's draws: a mix (splitmix64) of the job's seed and where the pass
/// is (worker, step, and a sub-position such as a micro-batch or an evaluation chunk). Distinct
/// inputs give unrelated streams.
uint64_t draw_seed(uint64_t job_seed, int64_t worker, int64_t step, int64_t part = 0);

class seeded_draws {
 public:
  /// Waits for every other holder in this process, then seeds LibTorch's default CPU generator.
  explicit seeded_draws(uint64_t seed);
  seeded_draws(const seeded_draws&) = delete;
  seeded_draws& operator=(const seeded_draws&) = delete;

 private:
  std::lock_guard<std::mutex> hold_;
};

/// The lock seeded_draws takes, for code that seeds LibTorch's generator itself (the initial
/// weights) and must not interleave with a forward pass that draws.
std::mutex& generator_lock();

}  // namespace troupe
