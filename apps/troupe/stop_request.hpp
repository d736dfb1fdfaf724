// Ctrl-C or SIGTERM as a request to stop, for `troupe run` and `troupe node`: the first one asks
// (the run stops at a step boundary, a node leaves its run); another at least a second later,
// while that request waits (a step that does not end: a worker stuck in a library call, an agent
// still loading data), ends the process at once. Sooner it is the same stop delivered twice (a
// terminal's Ctrl-C reaches the whole process group, `timeout` and a --processes parent pass it
// on). Every file troupe writes is replaced whole or appended a record at a time, so what is on
// disk stays readable either way.
#pragma once

#include <atomic>
#include <cstdint>

namespace troupe {

struct stop_request {
  std::atomic<bool> asked{false};
  std::atomic<int64_t> first_ns{0};  ///< CLOCK_MONOTONIC, when it was first asked
};

/// Makes `handler` take SIGINT, SIGTERM and SIGHUP (a closed terminal or ssh session: it killed
/// a suite runner mid-job), each a stop; SIGHUP only where it is not ignored (nohup).
void take_stop_signals(void (*handler)(int));
/// Gives the three back to their default.
void release_stop_signals();

/// Call from the signal handler (async-signal-safe). `message` is written to stderr before a
/// second stop ends the process with 128 + signal.
void note_stop_signal(stop_request& request, int signal, const char* message);

}  // namespace troupe
