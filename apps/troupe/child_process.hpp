// A child process of the suite runner: started with posix_spawn, its output sent to a log file,
// watched without blocking (exit, resident memory) and signalled. One job of a suite runs in one
// child, so a crash, a runaway allocation or a kill touches that job only.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct child_exit {
  bool signaled = false;
  int code = 0;    ///< exit status when not signaled
  int signal = 0;  ///< the signal that ended it
  std::string describe() const;
  /// From what waitpid() reported.
  static child_exit of_wait_status(int status);
};

class child_process {
 public:
  /// Starts argv[0] with these arguments, stdin from /dev/null and stdout and stderr appended to
  /// `log_path`. Throws std::runtime_error naming the program when it cannot start.
  child_process(const std::vector<std::string>& argv, const std::string& log_path);
  /// Kills and reaps a child still running: none outlives its runner.
  ~child_process();
  child_process(const child_process&) = delete;
  child_process& operator=(const child_process&) = delete;

  /// Its exit, once it has ended (never blocks).
  std::optional<child_exit> poll();
  /// Resident set size in MiB, from /proc; 0 when it cannot be read (e.g. just ended).
  double rss_mb() const;
  void send(int signal) const;
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = -1;
  std::optional<child_exit> exit_;
};

/// The running program's own path (/proc/self/exe), to start more of itself.
std::string self_executable();

}  // namespace troupe
