// `troupe report DIR --serve HOST:PORT`: serves a run's or a suite's report page and redraws it
// from the folder on each request, reading only what the run appended since the last one.
#pragma once

#include <atomic>
#include <string>

namespace troupe {

/// Serves `folder` on host:port (port 0: one the OS picks) until `stop` is set. Prints the
/// address it serves on (stdout, flushed) once it listens. Returns the exit status.
int serve_report(const std::string& folder, const std::string& host, int port,
                 const std::atomic<bool>& stop);

}  // namespace troupe
