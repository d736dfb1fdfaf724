#include "apps/troupe/report_server.hpp"

#include "apps/troupe/commands.hpp"
#include "core/report/report_page.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <mutex>
#include <thread>

namespace troupe {
namespace {

namespace fs = std::filesystem;

// Size and modification time of the files a page is drawn from: a page is redrawn when they
// change, and the browser asks for this every second, so it is a stat, not a read.
std::string file_stamp(const fs::path& path) {
  std::error_code ec;
  const auto size = fs::file_size(path, ec);
  if (ec)
    return "-;";
  const auto time = fs::last_write_time(path, ec).time_since_epoch().count();
  return fmt::format("{}@{};", size, time);
}

std::string folder_stamp(const fs::path& dir) {
  std::string stamp;
  for (const char* name : {"metrics.jsonl", "summary.json", "job.json", "plan.txt"})
    stamp += file_stamp(dir / name);
  return stamp;
}

class report_source {
 public:
  explicit report_source(std::string folder)
      : folder_(std::move(folder)), suite_(is_suite_folder(folder_)) {}

  bool is_suite() const { return suite_; }

  // The page of the folder (job empty) or of one job of a suite.
  std::string page(const std::string& job) {
    std::lock_guard<std::mutex> lock(mutex_);
    const page_options live{true};
    if (!suite_ || !job.empty())
      return render_run_page(follower(job_folder(job)).refresh(), live);
    auto suite =
        read_suite_history(folder_, [this](const std::string& f) { return follower(f).refresh(); });
    return render_suite_page(suite, live);
  }

  std::string version() const {
    std::string stamp = folder_stamp(folder_);
    if (suite_) {
      std::error_code ec;
      for (const auto& entry : fs::directory_iterator(folder_, ec))
        if (entry.is_directory(ec))
          stamp += folder_stamp(entry.path());
    }
    return stamp;
  }

  // A suite's job name from a URL: only a folder of the suite, nothing outside it.
  bool has_job(const std::string& job) const {
    if (!suite_ || job.empty() || job == "." || job == ".." || job.find('/') != std::string::npos)
      return false;
    std::error_code ec;
    return fs::is_directory(fs::path(folder_) / job, ec);
  }

 private:
  std::string job_folder(const std::string& job) const {
    return job.empty() ? folder_ : (fs::path(folder_) / job).string();
  }
  run_follower& follower(const std::string& folder) {
    auto it = followers_.find(folder);
    if (it == followers_.end())
      it = followers_.emplace(folder, run_follower(folder)).first;
    return it->second;
  }

  std::string folder_;
  bool suite_;
  std::mutex mutex_;  // httplib answers on a pool of threads
  std::map<std::string, run_follower> followers_;
};

void answer_page(report_source& source, const std::string& job, httplib::Response& res) {
  try {
    res.set_content(source.page(job), "text/html; charset=utf-8");
  } catch (const std::exception& e) {
    res.status = 500;
    res.set_content(std::string("cannot draw the report: ") + e.what() + "\n", "text/plain");
  }
}

}  // namespace

int serve_report(const std::string& folder, const std::string& host, int port,
                 const std::atomic<bool>& stop) {
  report_source source(folder);
  try {
    source.page("");  // a folder that cannot be drawn is refused before anything listens
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return exit_failed;
  }
  httplib::Server server;
  server.Get(
      "/", [&](const httplib::Request&, httplib::Response& res) { answer_page(source, "", res); });
  server.Get("/report.html", [&](const httplib::Request&, httplib::Response& res) {
    answer_page(source, "", res);
  });
  server.Get("/version", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(source.version(), "text/plain");
  });
  server.Get(R"(/([^/]+)/report\.html)", [&](const httplib::Request& req, httplib::Response& res) {
    if (!source.has_job(req.matches[1])) {
      res.status = 404;
      res.set_content("no such job in this suite\n", "text/plain");
      return;
    }
    answer_page(source, req.matches[1], res);
  });
  server.Get(R"(/([^/]+)/version)", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(source.version(), "text/plain");
  });
  const int bound =
      port == 0 ? server.bind_to_any_port(host) : (server.bind_to_port(host, port) ? port : -1);
  if (bound < 0) {
    fmt::print(stderr, "error: --serve: cannot listen on {}:{} (in use, or not an address here)\n",
               host, port);
    return exit_usage;
  }
  fmt::print("serving the report of {} at http://{}:{}/ (Ctrl-C stops)\n", folder,
             host.find(':') != std::string::npos ? "[" + host + "]" : host, bound);
  std::fflush(stdout);
  // Signal handlers may not call into the server: a thread watches the flag instead.
  std::atomic<bool> ended{false};
  std::thread watcher([&] {
    while (!stop.load() && !ended.load())
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    server.stop();
  });
  const bool listened = server.listen_after_bind();
  ended.store(true);
  watcher.join();
  if (!listened && !stop.load()) {
    fmt::print(stderr, "error: --serve: the server stopped unexpectedly\n");
    return exit_failed;
  }
  return exit_ok;
}

}  // namespace troupe
