// A bound on the time a connection to the report server may take to send its request's head.
// libmicrohttpd's own timeout is one of inactivity, so a client that sends a header line every
// two seconds (slowloris) kept its connection for good; eight such held every worker of the
// server troupe used before. Here each connection is timed from its start, and one whose head is
// not complete within the bound is shut down (shutdown(2), which the server's loop then sees as
// the peer's end: the descriptor stays the server's to close).
//
// Thread safety: every call may come from any thread; the watch runs on a thread of its own.
#pragma once

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <thread>

namespace troupe {

class header_deadline {
 public:
  explicit header_deadline(std::chrono::milliseconds bound);
  ~header_deadline();
  header_deadline(const header_deadline&) = delete;
  header_deadline& operator=(const header_deadline&) = delete;

  /// A connection began on socket `fd`; `key` names it until closed().
  void started(const void* key, int fd);
  /// Its request's head arrived: it is no longer timed.
  void head_complete(const void* key);
  /// It is gone (called before its socket is closed).
  void closed(const void* key);
  /// Connections shut down for being too slow, so far.
  long long cut() const;

 private:
  void watch();

  struct timed {
    int fd;
    std::chrono::steady_clock::time_point start;
  };
  const std::chrono::milliseconds bound_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::map<const void*, timed> open_;
  long long cut_ = 0;
  bool stopping_ = false;
  std::thread watcher_;
};

}  // namespace troupe
