#include "actors/exchange/ring_runner.hpp"

#include <ATen/Parallel.h>

#include <stdexcept>

namespace troupe {

ring_runner::ring_runner(std::unique_ptr<socket_ring> ring, double idle_timeout_s,
                         done_function done, std::shared_ptr<host_reduction> host)
    : ring_(std::move(ring)),
      host_(std::move(host)),
      idle_timeout_s_(idle_timeout_s),
      done_(std::move(done)) {
  thread_ = std::thread([this] { run(); });
}

ring_runner::~ring_runner() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  abort_ = true;
  if (host_ && busy_)
    host_->abort("a host's leader stopped during a sum");
  wake_.notify_one();
  thread_.join();
}

void ring_runner::start(int64_t round, at::Tensor buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (busy_)
    throw std::logic_error("ring_runner: a sum is under way");
  busy_ = true;
  has_work_ = true;
  round_ = round;
  buffer_ = std::move(buffer);
  wake_.notify_one();
}

void ring_runner::run() {
  at::set_num_threads(1);  // the additions of a chunk: small, and the replica computes beside
  while (true) {
    int64_t round = 0;
    at::Tensor buffer;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      wake_.wait(lock, [this] { return has_work_ || stopping_; });
      if (stopping_)
        return;
      has_work_ = false;
      round = round_;
      buffer = std::move(buffer_);
    }
    std::string error;
    try {
      if (host_)
        host_->all_reduce(0, buffer);
      ring_->all_reduce(round, buffer, idle_timeout_s_, &abort_);
      if (host_)
        host_->broadcast(0, buffer, 0);
    } catch (const std::exception& e) {
      error = e.what();
    }
    busy_ = false;
    if (!abort_)
      done_(round, error);
  }
}

}  // namespace troupe
