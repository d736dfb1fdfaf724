#include "apps/troupe/node_processes.hpp"

#include "apps/troupe/child_process.hpp"

#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>

namespace troupe {
namespace {

// The signals the parent takes synchronously (sigwait): the stops it passes on, and SIGCHLD.
sigset_t supervised_signals() {
  sigset_t s;
  sigemptyset(&s);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGCHLD})
    sigaddset(&s, sig);
  return s;
}

// Reaps every child that has ended; logs each that failed. Returns false if one failed (a node
// that left on a stop passed on to it, exit 130, did not).
bool reap_ended(std::map<pid_t, std::string>& live,
                const std::function<void(const std::string&)>& log, bool stopping) {
  bool all_ok = true;
  int status = 0;
  pid_t pid;
  while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) {
    const auto it = live.find(pid);
    if (it == live.end())
      continue;
    const child_exit e = child_exit::of_wait_status(status);
    if (e.signaled || (e.code != 0 && !(stopping && e.code == 130))) {
      all_ok = false;
      log(fmt::format("node {} (process {}) ended: {}", it->second, pid, e.describe()));
    }
    live.erase(it);
  }
  return all_ok;
}

void signal_all(const std::map<pid_t, std::string>& live, int sig) {
  for (const auto& [pid, name] : live)
    ::kill(pid, sig);
}

// The threads this process runs (/proc/self/task), or 0 where that cannot be read.
std::size_t threads_running() {
  std::error_code error;
  std::size_t count = 0;
  for (std::filesystem::directory_iterator it("/proc/self/task", error), end; !error && it != end;
       it.increment(error))
    ++count;
  return error ? 0 : count;
}

}  // namespace

forked_node fork_node_processes(int64_t count,
                                const std::function<std::string(int64_t index)>& name_of,
                                const std::function<void(const std::string&)>& log) {
  // A fork copies the calling thread only: a thread some library started while loading (none
  // does in Debian's LibTorch; another build's might) would be missing in every node, holding
  // whatever lock it held. Refused rather than risked.
  if (const auto threads = threads_running(); threads > 1) {
    log(
        fmt::format("--processes {}: this process already runs {} threads before it starts the "
                    "nodes (a library started them as it loaded), and a fork would copy one; "
                    "start {} `troupe node` commands instead",
                    count, threads, count));
    return {false, 0, 1};
  }
  const sigset_t supervised = supervised_signals();
  sigset_t before;
  // Blocked before the first fork, so that a stop arriving while children start is held for
  // the loop below rather than killing the parent and orphaning them.
  pthread_sigmask(SIG_BLOCK, &supervised, &before);
  const pid_t parent = ::getpid();
  std::map<pid_t, std::string> live;
  bool ok = true;
  for (int64_t i = 0; i < count; ++i) {
    const pid_t pid = ::fork();
    if (pid == 0) {
      // The kernel sends this when the parent dies, however it dies; checked once more after
      // asking, for a parent that died before.
      ::prctl(PR_SET_PDEATHSIG, SIGTERM);
      if (::getppid() != parent)
        std::_Exit(1);
      pthread_sigmask(SIG_SETMASK, &before, nullptr);
      return {true, i, 0};
    }
    if (pid < 0) {
      log(fmt::format("cannot start node {}: {}; stopping the {} started", name_of(i),
                      std::strerror(errno), live.size()));
      signal_all(live, SIGTERM);
      ok = false;
      break;
    }
    live.emplace(pid, name_of(i));
  }
  bool stopping = false;  // a stop was passed on: the nodes leaving with 130 are no failures
  while (!live.empty()) {
    int sig = 0;
    if (sigwait(&supervised, &sig) != 0)
      continue;
    if (sig == SIGCHLD) {
      ok = reap_ended(live, log, stopping) && ok;
    } else {
      stopping = stopping || sig == SIGINT || sig == SIGTERM || sig == SIGHUP;
      signal_all(live, sig);
    }
  }
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  return {false, 0, !ok ? 1 : stopping ? 130 : 0};  // 130: run_node's node_stopped
}

}  // namespace troupe
