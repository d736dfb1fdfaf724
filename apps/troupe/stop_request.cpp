#include "apps/troupe/stop_request.hpp"

#include <unistd.h>

#include <csignal>
#include <cstring>
#include <ctime>

namespace troupe {

namespace {

bool hangup_taken = false;

}  // namespace

void take_stop_signals(void (*handler)(int)) {
  std::signal(SIGINT, handler);
  std::signal(SIGTERM, handler);
  struct sigaction current {};
  hangup_taken = ::sigaction(SIGHUP, nullptr, &current) == 0 && current.sa_handler != SIG_IGN;
  if (hangup_taken)
    std::signal(SIGHUP, handler);
}

void release_stop_signals() {
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
  if (hangup_taken)
    std::signal(SIGHUP, SIG_DFL);
}

void note_stop_signal(stop_request& request, int signal, const char* message) {
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  const int64_t ns = static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
  if (!request.asked.exchange(true)) {
    request.first_ns.store(ns);
    return;
  }
  if (ns - request.first_ns.load() < 1'000'000'000)
    return;
  [[maybe_unused]] const auto n = ::write(STDERR_FILENO, message, std::strlen(message));
  ::_exit(128 + signal);
}

}  // namespace troupe
