// Writes a run's checkpoints on a thread of its own, so that training does not wait for the
// disk: the run hands over the state it copied at a step boundary and goes on; the writer
// encodes and stores it (core/checkpoint/checkpoint_store) in the order handed over and keeps
// what happened for the run to record.
//
// Bounded: at most one checkpoint waits while one is written. One handed over while another
// still waits replaces it (the waiting one is reported as superseded, never written): the newest
// state is what goes to disk next, memory holds at most two copies of the state, and training
// never waits for a slow disk. Waiting for the writer instead would put the disk back into the
// step time, which is what the thread is for; every checkpoint that is written holds exactly
// the state after its step.
// Cheap beside the training: the thread runs at the lowest priority (nice 19), so on cores the
// workers keep busy it takes what they leave idle rather than time slices from them.
//
// Thread safety: submit() and finished() from one owner thread; the writing runs on the
// writer's thread. The destructor finishes every checkpoint handed over before it returns.
#pragma once

#include "core/checkpoint/run_checkpoint.hpp"

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace troupe {

struct checkpoint_written {
  int64_t step = 0;
  int64_t bytes = 0;
  double seconds = 0;  ///< encoding and writing, on the writer's thread
  std::string error;   ///< why it was not written; empty when it was
  /// >= 0: not written; the checkpoint of this step replaced it while it waited.
  int64_t superseded_by = -1;
};

class checkpoint_writer {
 public:
  /// Into `run_dir`/checkpoints, keeping the newest `keep`; `stages`, `layout` and
  /// `stage_parameters` as encode_checkpoint takes them.
  checkpoint_writer(std::string run_dir, int64_t keep, int64_t stages, parameter_layout layout,
                    std::vector<int64_t> stage_parameters = {});
  ~checkpoint_writer();
  checkpoint_writer(const checkpoint_writer&) = delete;
  checkpoint_writer& operator=(const checkpoint_writer&) = delete;

  /// Hands `c` over; a checkpoint that still waits to be written is superseded by it.
  void submit(run_checkpoint c);
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
  std::optional<run_checkpoint> waiting_;
  std::vector<checkpoint_written> done_;
  bool writing_ = false;
  bool closing_ = false;
  std::thread thread_;
};

}  // namespace troupe
