// Writes a run's checkpoints on a thread of its own, so that training does not wait for the
// disk: the run hands over the state it copied at a step boundary and goes on; the writer
// encodes and stores it (core/checkpoint/checkpoint_store) in the order handed over and keeps
// what happened for the run to record.
//
// Bounded: at most `waiting_limit` checkpoints wait while one is written; submit() blocks while
// that many wait, so memory holds a bounded number of copies of the state and a disk slower
// than the checkpoints asked for slows the run down rather than filling memory. Every
// checkpoint asked for is written (each holds exactly the state after its step): replacing a
// waiting one by a newer one instead would break `every_steps` (and resumes from a named step).
// Its thread runs at the run's priority: tried at nice 19, it starved while the replicas kept
// both cores busy, the queue filled and the run waited on it (bench/checkpoint on 2 shared
// cores, about 86k samples/s without checkpoints: 44% step-time overhead at nice 19, 33% at the
// run's priority).
//
// Thread safety: submit() and finished() from one owner thread; the writing runs on the
// writer's thread. The destructor finishes every checkpoint handed over before it returns.
#pragma once

#include "core/checkpoint/run_checkpoint.hpp"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace troupe {

struct checkpoint_written {
  int64_t step = 0;
  int64_t bytes = 0;
  double seconds = 0;  ///< encoding and writing, on the writer's thread
  std::string error;   ///< why it was not written; empty when it was
};

/// Why the first of `written` that failed was not written ("the checkpoint after N steps could
/// not be written: ..."), or "". A run whose checkpoint fails ends there (a full disk, most
/// often): going on would train without the safety it asked for, and the checkpoints before it
/// stay, so `--resume` continues once there is room.
std::string write_failure(const std::vector<checkpoint_written>& written);

class checkpoint_writer {
 public:
  /// Into `run_dir`/checkpoints, keeping the newest `keep`; `stages`, `layout` and
  /// `stage_parameters` as encode_checkpoint takes them.
  checkpoint_writer(std::string run_dir, int64_t keep, int64_t stages, parameter_layout layout,
                    std::vector<int64_t> stage_parameters = {});
  ~checkpoint_writer();
  checkpoint_writer(const checkpoint_writer&) = delete;
  checkpoint_writer& operator=(const checkpoint_writer&) = delete;

  /// Hands `c` over; blocks while `waiting_limit` checkpoints already wait.
  void submit(run_checkpoint c);
  static constexpr std::size_t waiting_limit = 2;
  /// What was written (or failed) since the last call.
  std::vector<checkpoint_written> finished();
  /// Blocks until every checkpoint handed over is written; returns what finished().
  std::vector<checkpoint_written> flush();

 private:
  void loop();

  std::string run_dir_;
  int64_t keep_;
  int64_t stages_;
  parameter_layout layout_;
  std::vector<int64_t> stage_parameters_;
  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<run_checkpoint> queue_;
  std::vector<checkpoint_written> done_;
  bool writing_ = false;
  bool closing_ = false;
  std::thread thread_;
};

}  // namespace troupe
