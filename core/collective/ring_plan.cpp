#include "core/collective/ring_plan.hpp"

#include <stdexcept>
#include <string>

namespace troupe {
namespace {

int64_t wrap(int64_t i, int64_t n) {
  return ((i % n) + n) % n;
}

}  // namespace

std::vector<chunk_range> ring_chunks(int64_t numel, int64_t n) {
  if (n < 1 || numel < 0)
    throw std::invalid_argument("ring_chunks: needs n >= 1 and numel >= 0, got n = " +
                                std::to_string(n) + ", numel = " + std::to_string(numel));
  std::vector<chunk_range> chunks(static_cast<std::size_t>(n));
  const int64_t base = numel / n;
  const int64_t extra = numel % n;
  int64_t offset = 0;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t count = base + (i < extra ? 1 : 0);
    chunks[static_cast<std::size_t>(i)] = {offset, count};
    offset += count;
  }
  return chunks;
}

ring_step ring_step_of(int64_t rank, int64_t n, int64_t step) {
  if (n < 1 || rank < 0 || rank >= n || step < 0 || step >= ring_step_count(n))
    throw std::invalid_argument("ring_step_of: rank " + std::to_string(rank) + ", step " +
                                std::to_string(step) + " is outside a ring of " +
                                std::to_string(n));
  if (step < n - 1)  // reduce-scatter
    return {wrap(rank - step, n), wrap(rank - step - 1, n), true};
  const int64_t k = step - (n - 1);  // all-gather: rank r starts with its finished chunk r + 1
  return {wrap(rank + 1 - k, n), wrap(rank - k, n), false};
}

int64_t ring_elements_sent(int64_t rank, int64_t n, int64_t numel) {
  const auto chunks = ring_chunks(numel, n);
  int64_t sent = 0;
  for (int64_t step = 0; step < ring_step_count(n); ++step)
    sent += chunks[static_cast<std::size_t>(ring_step_of(rank, n, step).send_chunk)].count;
  return sent;
}

}  // namespace troupe
