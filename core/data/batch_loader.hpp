// Gathers the batches a worker trains on ahead of its steps, on a thread of its own: the rows
// of the next `depth` steps (read through a memory map, augmented, normalized) wait in a
// bounded queue, so a step takes its batch without waiting while the loader keeps up. A step
// the loader did not expect (the first, one redone after a lost node, after a new share or a
// resume) restarts it at that step. What a step waited is returned with its batch: the run's
// data_wait_s.
//
// The batches are exactly those the gather function makes on the caller's thread, in the
// same order of steps: loading ahead changes no bit of training.
//
// Thread safety: take() and restart() from one thread (the worker's); the loader's thread is
// the object's own, stopped and joined by the destructor.
#pragma once

#include <ATen/core/Tensor.h>

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace troupe {

struct loaded_batch {
  int64_t step = -1;
  at::Tensor images;
  at::Tensor labels;
};

class batch_loader;

/// `step`'s batch from `loader` where the worker has one (made ahead), else made by `gather` on
/// the calling thread; the seconds the caller waited for it either way are added to `waited`
/// (the step's data_wait_s).
loaded_batch take_batch(batch_loader* loader, int64_t step,
                        const std::function<loaded_batch(int64_t)>& gather, double& waited);

class batch_loader {
 public:
  /// `gather(step)`: the batch of `step`, as the caller would make it; `depth` >= 1 batches
  /// are kept ready, from the first step taken on.
  batch_loader(std::function<loaded_batch(int64_t)> gather, int64_t depth);
  ~batch_loader();
  batch_loader(const batch_loader&) = delete;
  batch_loader& operator=(const batch_loader&) = delete;

  /// `step`'s batch and the seconds this call waited for it. Rethrows what the gather threw
  /// for that step (a data file's bad row).
  std::pair<loaded_batch, double> take(int64_t step);
  /// Drops the batches made so far (they were for another share of the batch).
  void restart();

 private:
  void run();
  void restart_at(int64_t step);  // with the lock held

  std::function<loaded_batch(int64_t)> gather_;
  int64_t depth_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<loaded_batch> ready_;
  std::exception_ptr failure_;  ///< what the gather of step next_ - 1 threw
  int64_t failed_step_ = -1;
  int64_t next_ = -1;        ///< the step the loader makes next; -1: none asked for yet
  uint64_t generation_ = 0;  ///< changes on a restart: a batch in the making is dropped
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace troupe
