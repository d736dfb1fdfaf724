// An actor system stopped without waiting for ever. CAF's actor_system destructor waits for the
// thread of every detached actor, and the thread of one still referenced somewhere never ends:
// a coordinator over nodes with a sharded parameter server was seen waiting so, once in about a
// dozen runs under load, after its run was over (cause not found: 56 runs since went without
// it). A run must not hang on its way out, so the coordinator's system is stopped on a thread of
// its own, and past a limit the run goes on without it: the caller writes the run's outputs as
// usual, and the process then ends at once (end_process), since static destructors running
// beside a half-stopped system could crash it.
#pragma once

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace troupe {

/// A system with the configuration it refers to (which must outlive it).
struct owned_system {
  std::unique_ptr<caf::actor_system_config> config = std::make_unique<caf::actor_system_config>();
  std::unique_ptr<caf::actor_system> system;
};

/// Destroys `s` on a thread of its own and waits up to `limit`. Past it, says so through `log`
/// (naming the limit), leaves the thread stopping the system, and returns false.
bool stop_within(owned_system s, std::chrono::milliseconds limit,
                 const std::function<void(const std::string&)>& log);

/// Ends the program with `code`: at once (std::_Exit, streams flushed) when stop_within left a
/// system stopping, else by returning it to the caller's normal exit. A program of its own that
/// runs over nodes through troupe's library ends through it too, as the troupe program does.
int end_process(int code);

}  // namespace troupe
