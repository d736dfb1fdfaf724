#include "apps/troupe/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <stdexcept>

extern char** environ;

namespace troupe {

std::string child_exit::describe() const {
  if (signaled)
    return std::string("killed by signal ") + std::to_string(signal) + " (" + strsignal(signal) +
           ")";
  return "exit status " + std::to_string(code);
}

child_exit child_exit::of_wait_status(int status) {
  child_exit e;
  if (WIFSIGNALED(status)) {
    e.signaled = true;
    e.signal = WTERMSIG(status);
  } else {
    e.code = WEXITSTATUS(status);
  }
  return e;
}

child_process::child_process(const std::vector<std::string>& argv, const std::string& log_path) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, log_path.c_str(), O_WRONLY | O_CREAT | O_APPEND,
                                   0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::vector<char*> args;
  for (const auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // This process's environment, its own parent_variable (if any) replaced by this pid.
  const std::string parent = std::string(parent_variable) + "=" + std::to_string(::getpid());
  std::vector<char*> env;
  for (char** e = environ; *e != nullptr; ++e)
    if (std::strncmp(*e, parent.c_str(), std::strlen(parent_variable) + 1) != 0)
      env.push_back(*e);
  env.push_back(const_cast<char*>(parent.c_str()));
  env.push_back(nullptr);
  const int rc = posix_spawn(&pid_, argv.at(0).c_str(), &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw std::runtime_error("cannot start " + argv[0] + ": " + std::strerror(rc));
}

child_process::~child_process() {
  if (exit_ || pid_ <= 0)
    return;
  ::kill(pid_, SIGKILL);
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
}

std::optional<child_exit> child_process::poll() {
  if (exit_)
    return exit_;
  int status = 0;
  const pid_t r = ::waitpid(pid_, &status, WNOHANG);
  if (r != pid_)
    return std::nullopt;
  exit_ = child_exit::of_wait_status(status);
  return exit_;
}

double child_process::rss_mb() const {
  std::ifstream status("/proc/" + std::to_string(pid_) + "/status");
  std::string key;
  while (status >> key) {
    if (key == "VmRSS:") {
      double kib = 0;
      status >> kib;
      return kib / 1024.0;
    }
    status.ignore(4096, '\n');
  }
  return 0;
}

void child_process::send(int signal) const {
  if (!exit_ && pid_ > 0)
    ::kill(pid_, signal);
}

void end_with_parent() {
  const char* value = std::getenv(parent_variable);
  if (value == nullptr)
    return;
  const auto parent = static_cast<pid_t>(std::atol(value));
  ::unsetenv(parent_variable);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) {  // it ended before the request was in place
    std::fprintf(stderr, "troupe: the process that started this one (pid %ld, %s) has ended\n",
                 static_cast<long>(parent), parent_variable);
    std::_Exit(128 + SIGTERM);
  }
}

std::string last_log_line(const std::string& log_path, const std::string& prefix) {
  std::ifstream in(log_path);
  std::string line, last;
  while (std::getline(in, line))
    if (line.size() > prefix.size() && line.rfind(prefix, 0) == 0)
      last = line.substr(prefix.size());
  constexpr std::size_t longest = 400;
  return last.size() > longest ? last.substr(0, longest) + "..." : last;
}

std::string self_executable() {
  char buffer[4096];
  const ssize_t n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0)
    throw std::runtime_error(std::string("cannot find this program's path: ") +
                             std::strerror(errno));
  return std::string(buffer, static_cast<std::size_t>(n));
}

}  // namespace troupe
