// A child process of the suite runner: started with posix_spawn, its output sent to a log file,
// watched without blocking (exit, resident memory) and signalled. One job of a suite runs in one
// child, so a crash, a runaway allocation or a kill touches that job only. A child that is
// troupe itself ends when its parent does, however the parent ended (kill -9 included): a suite
// runner killed left its jobs training on unwatched, past their limits, in folders the next run
// of the suite then wrote into.
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
  /// `log_path`, and parent_variable naming this process. Throws std::runtime_error naming the
  /// program when it cannot start. Call from the main thread: the kernel ties the child to the
  /// thread that started it.
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

/// What a child said last in its log: the last non-empty line starting with `prefix`, the
/// prefix left out and cut after 400 characters ("..."); "" when none (or no log).
std::string last_log_line(const std::string& log_path, const std::string& prefix = "");

/// The environment variable by which a child_process learns its parent's pid.
inline constexpr const char* parent_variable = "TROUPE_PARENT_PID";

/// In a troupe started by a child_process (parent_variable set): asks the kernel for SIGTERM
/// when the parent ends, a stop like Ctrl-C's, and exits at once if it has ended already. The
/// variable is cleared, so that what this process starts is not tied to its parent.
void end_with_parent();

}  // namespace troupe
