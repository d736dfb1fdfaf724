#include "core/collective/step_barrier.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace troupe {
namespace {

// Tells the core this is a spin-wait loop (frees the pipeline for a sibling hyperthread).
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#endif
}

}  // namespace

step_barrier::step_barrier(int64_t parties, std::chrono::microseconds spin) : parties_(parties) {
  if (parties < 1)
    throw std::invalid_argument("step_barrier: needs at least one party, got " +
                                std::to_string(parties));
  budgets_.assign(static_cast<std::size_t>(parties), spin_budget(spin));
}

void step_barrier::throw_aborted() {
  std::lock_guard<std::mutex> lock(mutex_);
  throw barrier_aborted(why_);
}

void step_barrier::arrive_and_wait(int64_t party) {
  if (party < 0 || party >= parties_)
    throw std::invalid_argument("step_barrier: party " + std::to_string(party) + " of " +
                                std::to_string(parties_));
  auto& budget = budgets_[static_cast<std::size_t>(party)];
  if (aborted_.load(std::memory_order_acquire))
    throw_aborted();
  const uint64_t round = round_.load(std::memory_order_acquire);
  if (arrived_.fetch_add(1, std::memory_order_acq_rel) + 1 == parties_) {
    // The last to arrive opens the next round. Resetting the count before publishing the round
    // is safe: nobody can arrive for the next round before seeing it.
    arrived_.store(0, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      round_.store(round + 1, std::memory_order_release);
    }
    wake_.notify_all();
    return;
  }
  const auto start = std::chrono::steady_clock::now();
  if (budget.now().count() > 0) {
    const auto until = start + budget.now();
    for (uint32_t i = 1;; ++i) {
      if (round_.load(std::memory_order_acquire) != round) {
        budget.record(std::chrono::steady_clock::now() - start);
        return;
      }
      if (aborted_.load(std::memory_order_acquire))
        throw_aborted();
      cpu_relax();
      if (i % 64 == 0 && std::chrono::steady_clock::now() >= until)
        break;
    }
  }
  std::unique_lock<std::mutex> lock(mutex_);
  wake_.wait(lock, [&] {
    return round_.load(std::memory_order_acquire) != round ||
           aborted_.load(std::memory_order_acquire);
  });
  if (round_.load(std::memory_order_acquire) == round)
    throw barrier_aborted(why_);
  budget.record(std::chrono::steady_clock::now() - start);
}

void step_barrier::abort(const std::string& why) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_.load(std::memory_order_relaxed))
      return;
    why_ = why;
    aborted_.store(true, std::memory_order_release);
  }
  wake_.notify_all();
}

}  // namespace troupe
