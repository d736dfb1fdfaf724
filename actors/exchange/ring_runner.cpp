#include "actors/exchange/ring_runner.hpp"

#include <ATen/Parallel.h>

#include <stdexcept>

namespace troupe {

struct ring_runner::shared {
  std::unique_ptr<cross_process_sum> ring;
  std::shared_ptr<host_reduction> host;
  double idle_timeout_s = 0;
  done_function done;
  std::mutex mutex;
  std::condition_variable wake;
  std::condition_variable ended_cv;
  bool has_work = false;
  bool stopping = false;
  bool ended = false;  ///< the thread is past its last use of this
  int64_t round = 0;
  at::Tensor buffer;
  std::atomic<bool> busy{false};
  std::atomic<bool> abort{false};
};

ring_runner::ring_runner(std::unique_ptr<cross_process_sum> ring, double idle_timeout_s,
                         done_function done, std::shared_ptr<host_reduction> host)
    : shared_(std::make_shared<shared>()) {
  shared_->ring = std::move(ring);
  shared_->host = std::move(host);
  shared_->idle_timeout_s = idle_timeout_s;
  shared_->done = std::move(done);
  thread_ = std::thread([s = shared_] { run(s); });
}

ring_runner::~ring_runner() {
  auto& s = *shared_;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    s.stopping = true;
  }
  s.abort = true;
  s.ring->interrupt();
  if (s.host && s.busy)
    s.host->abort("a host's leader stopped during a sum");
  s.wake.notify_one();
  std::unique_lock<std::mutex> lock(s.mutex);
  const bool ended = s.ended_cv.wait_for(lock, abandon_after, [&] { return s.ended; });
  lock.unlock();
  if (ended)
    thread_.join();
  else
    thread_.detach();  // it holds what it uses, and reports nothing once aborted
}

bool ring_runner::busy() const {
  return shared_->busy.load();
}

int64_t ring_runner::received() const {
  return shared_->ring->received();
}

void ring_runner::start(int64_t round, at::Tensor buffer) {
  auto& s = *shared_;
  std::lock_guard<std::mutex> lock(s.mutex);
  if (s.busy)
    throw std::logic_error("ring_runner: a sum is under way");
  s.busy = true;
  s.has_work = true;
  s.round = round;
  s.buffer = std::move(buffer);
  s.wake.notify_one();
}

void ring_runner::run(const std::shared_ptr<shared>& shared_state) {
  auto& s = *shared_state;
  at::set_num_threads(1);  // the additions of a chunk: small, and the replica computes beside
  while (true) {
    int64_t round = 0;
    at::Tensor buffer;
    {
      std::unique_lock<std::mutex> lock(s.mutex);
      s.wake.wait(lock, [&] { return s.has_work || s.stopping; });
      if (s.stopping) {
        s.ended = true;
        s.ended_cv.notify_all();
        return;
      }
      s.has_work = false;
      round = s.round;
      buffer = std::move(s.buffer);
    }
    std::string error;
    try {
      if (s.host)
        s.host->all_reduce(0, buffer);
      s.ring->all_reduce(round, buffer, s.idle_timeout_s, &s.abort);
      if (s.host)
        s.host->broadcast(0, buffer, 0);
    } catch (const std::exception& e) {
      error = e.what();
    }
    s.busy = false;
    if (!s.abort)
      s.done(round, error);
  }
}

}  // namespace troupe
