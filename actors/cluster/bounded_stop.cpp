#include "actors/cluster/bounded_stop.hpp"

#include <fmt/format.h>
#include <caf/logger.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <future>
#include <thread>

namespace troupe {
namespace {

std::atomic<bool> abandoned{false};

}  // namespace

bool stop_within(owned_system s, std::chrono::milliseconds limit,
                 const std::function<void(const std::string&)>& log) {
  // The system's destructor waits until its logger is released, and the thread that made the
  // system holds the logger (a thread-local reference CAF sets in the system's constructor):
  // let go of it here, or the stopping thread waits for ever.
  caf::logger::set_current_actor_system(nullptr);
  std::promise<void> stopped;
  auto done = stopped.get_future();
  std::thread stopper([s = std::move(s), stopped = std::move(stopped)]() mutable {
    s.system.reset();  // the system first: it refers to its configuration
    s.config.reset();
    stopped.set_value();
  });
  if (done.wait_for(limit) == std::future_status::ready) {
    stopper.join();
    return true;
  }
  abandoned = true;
  stopper.detach();
  if (log)
    log(
        fmt::format("the actor system did not stop within {:g} s of the run's end (an actor "
                    "thread still waits); the run's outputs are written and the process ends "
                    "without it",
                    std::chrono::duration<double>(limit).count()));
  return false;
}

int end_process(int code) {
  if (!abandoned)
    return code;
  std::fflush(nullptr);
  std::_Exit(code);
}

}  // namespace troupe
