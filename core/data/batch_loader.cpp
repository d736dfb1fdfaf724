#include "core/data/batch_loader.hpp"

#include <ATen/Parallel.h>

#include <algorithm>
#include <chrono>

namespace troupe {

loaded_batch take_batch(batch_loader* loader, int64_t step,
                        const std::function<loaded_batch(int64_t)>& gather, double& waited) {
  if (loader != nullptr) {
    auto [taken, seconds] = loader->take(step);
    waited += seconds;
    return std::move(taken);
  }
  const auto start = std::chrono::steady_clock::now();
  auto made = gather(step);
  waited += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return made;
}

batch_loader::batch_loader(std::function<loaded_batch(int64_t)> gather, int64_t depth)
    : gather_(std::move(gather)), depth_(std::max<int64_t>(1, depth)) {
  thread_ = std::thread([this] { run(); });
}

batch_loader::~batch_loader() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void batch_loader::restart_at(int64_t step) {
  ready_.clear();
  failure_ = nullptr;
  failed_step_ = -1;
  next_ = step;
  ++generation_;
  changed_.notify_all();
}

void batch_loader::restart() {
  std::lock_guard<std::mutex> lock(mutex_);
  restart_at(-1);
}

std::pair<loaded_batch, double> batch_loader::take(int64_t step) {
  std::unique_lock<std::mutex> lock(mutex_);
  // Expected: the next batch queued, the one the loader makes now or will make next (it makes
  // none after a failed gather), or the failed one itself.
  const bool expected =
      (!ready_.empty() && ready_.front().step == step) ||
      (ready_.empty() && ((next_ == step && failed_step_ < 0) || failed_step_ == step));
  if (!expected)
    restart_at(step);
  const auto start = std::chrono::steady_clock::now();
  changed_.wait(lock, [&] { return !ready_.empty() || failed_step_ == step; });
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (ready_.empty()) {
    const auto failure = failure_;
    restart_at(-1);  // a step taken again after the error gathers afresh
    std::rethrow_exception(failure);
  }
  auto batch = std::move(ready_.front());
  ready_.pop_front();
  changed_.notify_all();  // room in the queue
  return {std::move(batch), waited};
}

void batch_loader::run() {
  // Gathers are small ATen operations: on this thread's own, they would otherwise fan out over
  // every core and contend with the workers' compute.
  at::set_num_threads(1);
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    changed_.wait(lock, [&] {
      return stop_ ||
             (next_ >= 0 && failed_step_ < 0 && static_cast<int64_t>(ready_.size()) < depth_);
    });
    if (stop_)
      return;
    const auto step = next_;
    const auto generation = generation_;
    lock.unlock();
    loaded_batch batch;
    std::exception_ptr failure;
    try {
      batch = gather_(step);
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    if (generation != generation_)
      continue;  // restarted meanwhile: the batch was for a step no longer wanted
    if (failure) {
      failure_ = failure;
      failed_step_ = step;
    } else {
      ready_.push_back(std::move(batch));
    }
    next_ = step + 1;
    changed_.notify_all();
  }
}

}  // namespace troupe
