// Placement of a suite's jobs on the machine's devices as a pure state machine: which jobs start
// now, on which device, and which wait. A job asks for a device kind ("cpu", "cuda:N", or "cuda"
// for any GPU) and a number of threads; a device offers threads. Jobs start in queue order as
// long as a matching device has the threads free and fewer than `max_concurrent` run; a job that
// does not fit now waits, and a later, smaller one may start ahead of it (backfill) so that no
// device idles while something could run on it. A job no device could ever hold is refused up
// front.
//
// Thread safety: none; owned by the suite runner.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct device_offer {
  std::string name;     ///< "cpu", "cuda:0", ...
  int64_t threads = 1;  ///< what jobs placed on it may use at once
};

struct placement_request {
  std::string device = "cpu";  ///< "cpu", "cuda:N" or "cuda" (any cuda device)
  int64_t threads = 1;
};

struct placement {
  std::size_t job = 0;
  std::size_t device = 0;
};

/// Why no offered device could ever hold `request` ("asks for device ... which no entry of
/// devices offers", "needs N threads on cpu, ..."), or nothing when one can.
std::optional<std::string> unplaceable(const std::vector<device_offer>& devices,
                                       const placement_request& request);

class placement_queue {
 public:
  /// Throws job_error naming /jobs/i for a job that no offered device can hold.
  placement_queue(std::vector<device_offer> devices, std::vector<placement_request> jobs,
                  int64_t max_concurrent);

  /// The jobs to start now, each with the device it gets (its threads are then taken).
  std::vector<placement> start_ready();
  /// A started job ended (any way): its threads are free again.
  void finished(std::size_t job);

  bool all_done() const { return done_ == jobs_.size(); }
  std::size_t running() const { return running_; }

 private:
  std::vector<device_offer> devices_;
  std::vector<placement_request> jobs_;
  int64_t max_concurrent_;
  std::vector<int64_t> free_threads_;  ///< by device
  enum class state { queued, running, done };
  std::vector<state> states_;
  std::vector<std::size_t> device_of_;  ///< by job, once started
  std::size_t running_ = 0;
  std::size_t done_ = 0;
};

}  // namespace troupe
