#include "core/checkpoint/checkpoint_writer.hpp"

#include <chrono>

namespace troupe {

std::string write_failure(const std::vector<checkpoint_written>& written) {
  for (const auto& w : written)
    if (!w.error.empty())
      return "the checkpoint after " + std::to_string(w.step + 1) +
             (w.step == 0 ? " step" : " steps") + " could not be written: " + w.error;
  return "";
}

checkpoint_writer::checkpoint_writer(std::string run_dir, int64_t keep, int64_t stages,
                                     parameter_layout layout, std::vector<int64_t> stage_parameters)
    : run_dir_(std::move(run_dir)),
      keep_(keep),
      stages_(stages),
      layout_(std::move(layout)),
      stage_parameters_(std::move(stage_parameters)),
      thread_([this] { loop(); }) {}

checkpoint_writer::~checkpoint_writer() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void checkpoint_writer::submit(run_checkpoint c) {
  {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return queue_.size() < waiting_limit; });
    queue_.push_back(std::move(c));
  }
  changed_.notify_all();
}

std::vector<checkpoint_written> checkpoint_writer::finished() {
  std::lock_guard<std::mutex> lock(mutex_);
  return std::exchange(done_, {});
}

std::vector<checkpoint_written> checkpoint_writer::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [this] { return queue_.empty() && !writing_; });
  return std::exchange(done_, {});
}

void checkpoint_writer::loop() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty())
      return;  // closing, and everything handed over is written
    auto c = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    changed_.notify_all();  // room for a submit() that waits
    lock.unlock();
    checkpoint_written w;
    w.step = c.step;
    const auto start = std::chrono::steady_clock::now();
    try {
      w.bytes = write_checkpoint(run_dir_,
                                 encode_checkpoint(c, stages_, layout_, stage_parameters_), keep_);
    } catch (const std::exception& e) {
      w.error = e.what();
    }
    w.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    lock.lock();
    writing_ = false;
    done_.push_back(std::move(w));
    changed_.notify_all();
  }
}

}  // namespace troupe
