// The chunk plan of a bandwidth-optimal ring all-reduce, as pure arithmetic.
//
// N ranks in a ring (rank r sends only to r + 1 and receives only from r - 1, mod N) each hold a
// buffer cut into N chunks. Reduce-scatter takes N - 1 steps: in step k rank r sends its partial
// sum of chunk (r - k) and adds the chunk (r - k - 1) it receives. Rank r then holds the full sum
// of chunk (r + 1). All-gather takes N - 1 more steps in which the finished chunks travel round
// the ring once and are copied. Every rank sends 2(N - 1) chunks, 2(N - 1)/N of the buffer,
// whatever N is: the bandwidth of the slowest link, not of a hub, bounds the step.
#pragma once

#include <cstdint>
#include <vector>

namespace troupe {

/// A contiguous range of elements of the buffer.
struct chunk_range {
  int64_t offset = 0;
  int64_t count = 0;
};

/// One step of one rank: which chunk it sends to its successor, which it receives from its
/// predecessor, and whether the received one is added (reduce-scatter) or copied (all-gather).
struct ring_step {
  int64_t send_chunk = 0;
  int64_t recv_chunk = 0;
  bool reduce = false;
};

/// The N chunks of `numel` elements, as even as possible (the first numel % N get one more).
/// Chunks may be empty when numel < N. Throws std::invalid_argument for n < 1 or numel < 0.
std::vector<chunk_range> ring_chunks(int64_t numel, int64_t n);

/// Steps of one all-reduce among n ranks: 2(n - 1).
inline int64_t ring_step_count(int64_t n) {
  return 2 * (n - 1);
}

/// What `rank` does in `step` (0 <= step < ring_step_count(n)). Throws std::invalid_argument
/// outside those ranges.
ring_step ring_step_of(int64_t rank, int64_t n, int64_t step);

/// Elements `rank` sends in a whole all-reduce of `numel` elements.
int64_t ring_elements_sent(int64_t rank, int64_t n, int64_t numel);

}  // namespace troupe
