#include "core/collective/ring_allreduce.hpp"

#include "core/errors.hpp"

#include <ATen/ATen.h>

#include <stdexcept>
#include <string>

namespace troupe {

ring_allreduce::ring_allreduce(int64_t rank, int64_t ranks, const ring_options& options)
    : rank_(rank),
      ranks_(ranks),
      bucket_elements_(options.bucket_elements),
      window_(options.window) {
  if (ranks < 1 || rank < 0 || rank >= ranks || bucket_elements_ < 1 || window_ < 1)
    throw std::invalid_argument("ring_allreduce: rank " + std::to_string(rank) + " of " +
                                std::to_string(ranks) + " with buckets of " +
                                std::to_string(bucket_elements_) + " elements, " +
                                std::to_string(window_) + " in flight");
}

at::Tensor ring_allreduce::chunk_of(const bucket& b, int64_t chunk) const {
  const auto& c = b.chunks[static_cast<std::size_t>(chunk)];
  return buffer_.narrow(0, b.range.offset + c.offset, c.count);
}

ring_message ring_allreduce::message_for(int64_t index, int64_t step) const {
  const auto& b = buckets_[static_cast<std::size_t>(index)];
  const auto plan = ring_step_of(rank_, ranks_, step);
  auto chunk = chunk_of(b, plan.send_chunk);
  if (!chunk_source_)
    return {index, step, chunk.clone()};
  auto copy = chunk_source_(chunk.numel());
  copy.copy_(chunk);
  return {index, step, std::move(copy)};
}

std::vector<ring_message> ring_allreduce::start(at::Tensor buffer) {
  if (active_ && remaining_ > 0)
    throw std::logic_error("ring_allreduce: start while an all-reduce is unfinished");
  if (!buffer.defined() || buffer.dim() != 1 || !buffer.is_contiguous() ||
      buffer.scalar_type() != at::kFloat)
    throw std::invalid_argument("ring_allreduce: needs a contiguous 1-d float tensor");
  buffer_ = std::move(buffer);
  buckets_.clear();
  active_ = true;
  if (ranks_ == 1) {
    remaining_ = 0;
    return {};
  }
  const int64_t numel = buffer_.numel();
  for (int64_t offset = 0; offset < numel || (numel == 0 && buckets_.empty());
       offset += bucket_elements_) {
    const int64_t count = std::min(bucket_elements_, numel - offset);
    buckets_.push_back({{offset, count}, ring_chunks(count, ranks_), 0});
  }
  remaining_ = static_cast<int64_t>(buckets_.size());
  started_ = 0;
  std::vector<ring_message> first;
  start_up_to(window_ - 1, first);
  return first;
}

void ring_allreduce::start_up_to(int64_t last, std::vector<ring_message>& out) {
  last = std::min(last, static_cast<int64_t>(buckets_.size()) - 1);
  for (; started_ <= last; ++started_)
    out.push_back(message_for(started_, 0));
}

at::Tensor ring_allreduce::landing_for(int64_t bucket, int64_t step) const {
  if (!active_ || remaining_ == 0 || bucket < 0 || bucket >= static_cast<int64_t>(buckets_.size()))
    return {};
  const auto& b = buckets_[static_cast<std::size_t>(bucket)];
  if (step != b.next_step || step >= ring_step_count(ranks_))
    return {};
  const auto plan = ring_step_of(rank_, ranks_, step);
  if (plan.reduce)
    return {};
  return chunk_of(b, plan.recv_chunk);
}

std::vector<ring_message> ring_allreduce::on_receive(const ring_message& m) {
  const auto fail = [&](const std::string& what) {
    throw protocol_error("ring all-reduce, rank " + std::to_string(rank_) + ": " + what);
  };
  if (!active_ || remaining_ == 0)
    fail("a chunk arrived while no all-reduce is in progress");
  if (m.bucket < 0 || m.bucket >= static_cast<int64_t>(buckets_.size()))
    fail("a chunk for bucket " + std::to_string(m.bucket) + ", there are " +
         std::to_string(buckets_.size()));
  std::vector<ring_message> out;
  // A predecessor may be ahead by a bucket or two: this rank's first chunk of that bucket must
  // leave before the one the predecessor's chunk makes, so the bucket starts here now.
  start_up_to(m.bucket, out);
  auto& b = buckets_[static_cast<std::size_t>(m.bucket)];
  if (m.step != b.next_step)
    fail("bucket " + std::to_string(m.bucket) + " got step " + std::to_string(m.step) +
         ", expected step " + std::to_string(b.next_step));
  const auto plan = ring_step_of(rank_, ranks_, m.step);
  auto target = chunk_of(b, plan.recv_chunk);
  if (!m.chunk.defined() || m.chunk.scalar_type() != at::kFloat || m.chunk.dim() != 1 ||
      m.chunk.numel() != target.numel())
    fail("bucket " + std::to_string(m.bucket) + " step " + std::to_string(m.step) + " expected " +
         std::to_string(target.numel()) + " float elements");
  // The incoming chunk is this rank's to reuse (nobody touches a chunk once sent), so it
  // travels on as the next message: after the first step no chunk is copied for sending, and
  // the buffer is written only where it must hold a result.
  at::Tensor chunk = m.chunk;
  const bool owner = m.step == ranks_ - 2;  // the last reduce-scatter step finishes this chunk
  if (plan.reduce)
    chunk.add_(target);  // partial sum on its way; a + b == b + a, so every rank's bits agree
  if ((!plan.reduce || owner) && chunk.data_ptr() != target.data_ptr())
    target.copy_(chunk);  // not when it was read straight into place (landing_for)
  ++b.next_step;
  if (b.next_step < ring_step_count(ranks_)) {
    out.push_back({m.bucket, b.next_step, std::move(chunk)});
  } else {
    --remaining_;
    start_up_to(started_, out);  // a bucket finished: the next one may go
  }
  return out;
}

}  // namespace troupe
