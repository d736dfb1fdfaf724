#include "apps/troupe/header_deadline.hpp"

#include <sys/socket.h>

#include <algorithm>

namespace troupe {

header_deadline::header_deadline(std::chrono::milliseconds bound)
    : bound_(bound), watcher_([this] { watch(); }) {}

header_deadline::~header_deadline() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  watcher_.join();
}

void header_deadline::started(const void* key, int fd) {
  std::lock_guard<std::mutex> lock(mutex_);
  open_[key] = {fd, std::chrono::steady_clock::now()};
}

void header_deadline::head_complete(const void* key) {
  std::lock_guard<std::mutex> lock(mutex_);
  open_.erase(key);
}

void header_deadline::closed(const void* key) {
  std::lock_guard<std::mutex> lock(mutex_);
  open_.erase(key);
}

long long header_deadline::cut() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return cut_;
}

void header_deadline::watch() {
  // A tenth of the bound between looks: a slow head is cut within 1.1 times the bound.
  const auto interval = std::max(std::chrono::milliseconds(10), bound_ / 10);
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stopping_) {
    wake_.wait_for(lock, interval);
    const auto now = std::chrono::steady_clock::now();
    for (auto it = open_.begin(); it != open_.end();) {
      if (now - it->second.start < bound_) {
        ++it;
        continue;
      }
      // The entry goes before the server's closing notice does (that waits on this lock), so
      // the descriptor is still the connection's.
      ::shutdown(it->second.fd, SHUT_RDWR);
      ++cut_;
      it = open_.erase(it);
    }
  }
}

}  // namespace troupe
