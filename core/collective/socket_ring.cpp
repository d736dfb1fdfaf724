#include "core/collective/socket_ring.hpp"

#include "core/errors.hpp"

#include <ATen/ATen.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

namespace troupe {
namespace {

using clock_type = std::chrono::steady_clock;

constexpr int64_t frame_magic = 0x31464e4952505254;  // "TRPRINF1" read as little-endian
constexpr std::size_t header_bytes = 5 * sizeof(int64_t);
constexpr int poll_slice_ms = 10;

bool would_block(int error) {
  return error == EAGAIN || error == EWOULDBLOCK || error == EINTR;
}

}  // namespace

socket_ring::socket_ring(socket_fd to_successor, socket_fd from_predecessor, int64_t rank,
                         int64_t ranks, const ring_options& options)
    : out_(std::move(to_successor)),
      in_(std::move(from_predecessor)),
      rank_(rank),
      ranks_(ranks),
      max_chunk_((options.bucket_elements + ranks - 1) / std::max<int64_t>(ranks, 1)),
      ring_(rank, ranks, options) {
  if (ranks > 1 && (!out_.valid() || !in_.valid()))
    throw std::invalid_argument("socket_ring: a ring of several ranks needs both connections");
  ring_.set_chunk_source([this](int64_t elements) { return spare_chunk(elements); });
}

socket_ring::~socket_ring() {
  // The sessions go before the sockets they use.
  out_tls_.reset();
  in_tls_.reset();
}

void socket_ring::secure(ssl_ctx_st* context) {
  if (ranks_ < 2)
    return;
  out_tls_ =
      std::make_unique<ring_tls>(context, out_.get(), false, "the successor, " + peer(rank_ + 1));
  in_tls_ =
      std::make_unique<ring_tls>(context, in_.get(), true, "the predecessor, " + peer(rank_ - 1));
}

// Sends what it can of `parts`: through TLS one part at a time (a record each), else in one
// sendmsg. -1 with errno set when nothing could go.
ssize_t socket_ring::send_parts(const iovec* parts, int count) {
  if (count == 0)
    return 0;
  if (out_tls_)
    return out_tls_->write(parts[0].iov_base, parts[0].iov_len);
  msghdr msg{};
  msg.msg_iov = const_cast<iovec*>(parts);
  msg.msg_iovlen = static_cast<std::size_t>(count);
  return ::sendmsg(out_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

ssize_t socket_ring::receive_into(void* into, std::size_t bytes) {
  if (in_tls_)
    return in_tls_->read(into, bytes);
  return ::recv(in_.get(), into, bytes, MSG_DONTWAIT);
}

std::string socket_ring::peer(int64_t of) const {
  return "rank " + std::to_string(((of % ranks_) + ranks_) % ranks_);
}

void socket_ring::queue(ring_message m) {
  outgoing o;
  o.header = {frame_magic, round_, m.bucket, m.step, m.chunk.numel()};
  o.chunk = std::move(m.chunk);
  sending_.push_back(std::move(o));
}

bool socket_ring::send_some() {
  bool progressed = false;
  while (!sending_.empty()) {
    auto& o = sending_.front();
    const auto payload = static_cast<std::size_t>(o.chunk.numel()) * sizeof(float);
    iovec parts[2];
    int count = 0;
    if (o.sent < header_bytes)
      parts[count++] = {reinterpret_cast<char*>(o.header.data()) + o.sent, header_bytes - o.sent};
    const auto payload_sent = o.sent > header_bytes ? o.sent - header_bytes : 0;
    if (payload > payload_sent)
      parts[count++] = {static_cast<char*>(o.chunk.data_ptr()) + payload_sent,
                        payload - payload_sent};
    const auto n = send_parts(parts, count);
    if (n < 0) {
      if (would_block(errno))
        return progressed;
      throw ring_link_error("ring: sending to the successor (" + peer(rank_ + 1) +
                            "): " + std::strerror(errno));
    }
    o.sent += static_cast<std::size_t>(n);
    progressed = progressed || n > 0;
    if (o.sent == header_bytes + payload)
      sending_.pop_front();
  }
  return progressed;
}

void socket_ring::take_header() {
  const auto& h = header_;
  const auto from = "ring: from the predecessor (" + peer(rank_ - 1) + "): ";
  if (h[0] != frame_magic)
    throw protocol_error(from + "not a chunk header (wrong magic)");
  if (h[1] != round_)
    throw protocol_error(from + "a chunk of round " + std::to_string(h[1]) + " in round " +
                         std::to_string(round_));
  if (h[4] < 0 || h[4] > max_chunk_)
    throw protocol_error(from + "a chunk of " + std::to_string(h[4]) +
                         " elements, more than a chunk of a bucket holds (" +
                         std::to_string(max_chunk_) + ")");
  // All-gather chunks are read straight into the buffer: one copy fewer per chunk.
  auto landing = ring_.landing_for(h[2], h[3]);
  chunk_ = landing.defined() && landing.numel() == h[4] ? landing : spare_chunk(h[4]);
  chunk_got_ = 0;
}

// Chunks come off the socket into storage used before: fresh memory for each would cost a
// page fault per page (measured: a tenth of the time of a 3-rank 128 MB all-reduce).
at::Tensor socket_ring::spare_chunk(int64_t elements) {
  for (const auto& base : spares_)
    if (base.storage().use_count() == 1)  // nothing sends, sums or holds it any more
      return base.narrow(0, 0, elements);
  spares_.push_back(at::empty({max_chunk_}, at::kFloat));
  return spares_.back().narrow(0, 0, elements);
}

bool socket_ring::receive_some() {
  bool progressed = false;
  while (!ring_.done()) {
    char* into = nullptr;
    std::size_t want = 0;
    if (header_got_ < header_bytes) {
      into = reinterpret_cast<char*>(header_.data()) + header_got_;
      want = header_bytes - header_got_;
    } else {
      into = static_cast<char*>(chunk_.data_ptr()) + chunk_got_;
      want = static_cast<std::size_t>(chunk_.numel()) * sizeof(float) - chunk_got_;
    }
    if (want > 0) {
      const auto n = receive_into(into, want);
      if (n == 0)
        throw ring_link_error("ring: the predecessor (" + peer(rank_ - 1) +
                              ") closed the connection");
      if (n < 0) {
        if (would_block(errno))
          return progressed;
        throw ring_link_error("ring: receiving from the predecessor (" + peer(rank_ - 1) +
                              "): " + std::strerror(errno));
      }
      progressed = true;
      if (header_got_ < header_bytes) {
        header_got_ += static_cast<std::size_t>(n);
        if (header_got_ == header_bytes)
          take_header();
        continue;
      }
      chunk_got_ += static_cast<std::size_t>(n);
      if (chunk_got_ < static_cast<std::size_t>(chunk_.numel()) * sizeof(float))
        continue;
    }
    header_got_ = 0;
    const ring_message message{header_[2], header_[3], std::move(chunk_)};
    received_.fetch_add(1, std::memory_order_relaxed);
    for (auto& next : ring_.on_receive(message))
      queue(std::move(next));
  }
  return progressed;
}

void socket_ring::all_reduce(int64_t round, at::Tensor buffer, double idle_timeout_s,
                             const std::atomic<bool>* abort) {
  if (broken_)
    throw std::logic_error("socket_ring: the ring broke in an earlier round");
  if (!buffer.is_cpu())
    throw std::invalid_argument("socket_ring: sums buffers in host memory only");
  if (round <= round_)
    throw std::invalid_argument("socket_ring: round " + std::to_string(round) +
                                " does not follow round " + std::to_string(round_));
  broken_ = true;  // until this round completes
  round_ = round;
  received_.store(0, std::memory_order_relaxed);
  for (auto& m : ring_.start(std::move(buffer)))
    queue(std::move(m));
  auto last_progress = clock_type::now();
  while (!ring_.done() || !sending_.empty()) {
    if (abort != nullptr && abort->load(std::memory_order_relaxed))
      throw ring_link_error("ring: round " + std::to_string(round) + " aborted");
    const bool sent = !sending_.empty() && send_some();
    const bool got = !ring_.done() && receive_some();
    if (sent || got) {
      last_progress = clock_type::now();
      continue;
    }
    if (std::chrono::duration<double>(clock_type::now() - last_progress).count() > idle_timeout_s)
      throw ring_link_error("ring: round " + std::to_string(round) + " made no progress for " +
                            std::to_string(idle_timeout_s) + " s (" +
                            (ring_.done() ? "the successor, " + peer(rank_ + 1) + ", reads nothing"
                                          : "nothing from the predecessor, " + peer(rank_ - 1)) +
                            ")");
    // Under TLS a call may wait for the other direction first (the handshake's replies).
    const short out_events = out_tls_ ? out_tls_->wants() : POLLOUT;
    const short in_events = in_tls_ ? in_tls_->wants() : POLLIN;
    pollfd fds[2] = {{out_.get(), static_cast<short>(sending_.empty() ? 0 : out_events), 0},
                     {in_.get(), static_cast<short>(ring_.done() ? 0 : in_events), 0}};
    if (::poll(fds, 2, poll_slice_ms) < 0 && errno != EINTR)
      throw ring_link_error(std::string("ring: poll: ") + std::strerror(errno));
  }
  broken_ = false;
}

}  // namespace troupe
