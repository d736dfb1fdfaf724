#include "core/collective/replica_reduction.hpp"

#include <ATen/ATen.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

namespace troupe {

std::vector<chunk_range> reduction_slices(int64_t numel, int64_t ranks) {
  if (ranks < 1 || numel < 0)
    throw std::invalid_argument("reduction_slices: " + std::to_string(numel) + " elements over " +
                                std::to_string(ranks) + " ranks");
  constexpr int64_t line = 16;
  const int64_t lines = (numel + line - 1) / line;
  std::vector<chunk_range> slices;
  int64_t begin = 0;
  for (const auto& c : ring_chunks(lines, ranks)) {
    const int64_t end = std::min(numel, (c.offset + c.count) * line);
    slices.push_back({begin, end - begin});
    begin = end;
  }
  return slices;
}

replica_reduction::replica_reduction(int64_t ranks, int64_t numel, std::chrono::microseconds spin)
    : ranks_(ranks),
      numel_(numel),
      buffers_(static_cast<std::size_t>(ranks)),
      slices_(reduction_slices(numel, ranks)),
      barrier_(ranks, spin),
      reported_(static_cast<std::size_t>(ranks)) {
  for (auto& r : reported_)
    r.store(-1, std::memory_order_relaxed);
}

void replica_reduction::attach(int64_t rank, at::Tensor buffer) {
  if (rank < 0 || rank >= ranks_)
    throw std::invalid_argument("replica_reduction: rank " + std::to_string(rank) + " of " +
                                std::to_string(ranks_));
  if (!buffer.defined() || buffer.dim() != 1 || !buffer.is_contiguous() ||
      buffer.scalar_type() != at::kFloat || !buffer.is_cpu() || buffer.numel() != numel_)
    throw std::invalid_argument("replica_reduction: rank " + std::to_string(rank) +
                                " needs a contiguous 1-d float32 CPU buffer of " +
                                std::to_string(numel_) + " elements");
  auto& slot = buffers_[static_cast<std::size_t>(rank)];
  if (slot.defined())
    throw std::invalid_argument("replica_reduction: rank " + std::to_string(rank) +
                                " attached twice");
  slot = std::move(buffer);
}

void replica_reduction::all_reduce(int64_t rank) {
  if (rank < 0 || rank >= ranks_)
    throw std::invalid_argument("replica_reduction: rank " + std::to_string(rank) + " of " +
                                std::to_string(ranks_));
  barrier_.arrive_and_wait(rank);  // every gradient is complete, every buffer attached
  const auto& s = slices_[static_cast<std::size_t>(rank)];
  if (s.count > 0 && ranks_ > 1) {
    auto sum = buffers_[0].narrow(0, s.offset, s.count);
    for (int64_t r = 1; r < ranks_; ++r)
      sum.add_(buffers_[static_cast<std::size_t>(r)].narrow(0, s.offset, s.count));
    for (int64_t r = 1; r < ranks_; ++r)
      buffers_[static_cast<std::size_t>(r)].narrow(0, s.offset, s.count).copy_(sum);
  }
  barrier_.arrive_and_wait(rank);  // every slice is summed into every buffer
}

void replica_reduction::abort(const std::string& why) {
  barrier_.abort(why);
}

void replica_reduction::reported(int64_t rank, int64_t step) {
  reported_.at(static_cast<std::size_t>(rank)).store(step, std::memory_order_release);
}

int64_t replica_reduction::last_reported(int64_t rank) const {
  return reported_.at(static_cast<std::size_t>(rank)).load(std::memory_order_acquire);
}

bool replica_reduction::await_reports(int64_t step, std::chrono::milliseconds limit) const {
  const auto until = std::chrono::steady_clock::now() + limit;
  for (;;) {
    const bool all = std::all_of(reported_.begin(), reported_.end(), [&](const auto& r) {
      return r.load(std::memory_order_acquire) >= step;
    });
    if (all)
      return true;
    if (std::chrono::steady_clock::now() >= until)
      return false;
    // Rare (a replica failed) and short (the others only have an optimizer step to finish).
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

}  // namespace troupe
