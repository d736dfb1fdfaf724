#include "apps/troupe/report_server.hpp"

#include "apps/troupe/commands.hpp"
#include "apps/troupe/header_deadline.hpp"
#include "apps/troupe/listen_socket.hpp"
#include "core/io/terminal_output.hpp"
#include "core/report/report_page.hpp"
#include "core/suite/suite_config.hpp"

#include <fmt/format.h>
#include <microhttpd.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <regex>
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

  // A suite's job name from a URL: only a job's folder of the suite, nothing outside it (nor its
  // own specs/ and logs/, which are no runs: they were answered 500).
  bool has_job(const std::string& job) const {
    if (!suite_ || job.empty() || job == "." || job == ".." || job.find('/') != std::string::npos ||
        suite_folder_entries.count(job) != 0)
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
  std::mutex mutex_;  // the server answers on a pool of threads
  std::map<std::string, run_follower> followers_;
};

// What the server allows, and why each bound has its value.
struct serving_limits {
  /// A request's head (request line and headers) must fit: 16 KiB is twice the 8 KiB most
  /// servers take, and the report's own URLs are under 100 bytes. A 97 MB header grew the old
  /// server by 315 MB; here it is answered 431 and closed at the bound.
  std::size_t head_bytes = 16 << 10;
  /// Connections open at once: each costs a socket and a buffer, not a thread.
  unsigned connections = 256;
  /// From one address: a browser opens up to 6 per host; 16 leaves room for a few tabs.
  unsigned per_address = 16;
  /// The head must arrive within this (header_deadline): slowloris sent a line every 2 s.
  std::chrono::milliseconds head_time{10'000};
  /// Idle connections are dropped after this (libmicrohttpd's inactivity timeout).
  unsigned idle_seconds = 10;
  /// Threads that draw pages; each runs its own event loop over its share of the connections,
  /// so a slow client holds none of them.
  unsigned threads = 4;
};

struct server_context {
  report_source& source;
  header_deadline& deadline;
};

MHD_Result answer(MHD_Connection* connection, unsigned status, const std::string& body,
                  const char* type) {
  auto* response = MHD_create_response_from_buffer(body.size(), const_cast<char*>(body.data()),
                                                   MHD_RESPMEM_MUST_COPY);
  if (!response)
    return MHD_NO;
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  // One request per connection: the head deadline times each connection once.
  MHD_add_response_header(response, MHD_HTTP_HEADER_CONNECTION, "close");
  const auto queued = MHD_queue_response(connection, status, response);
  MHD_destroy_response(response);
  return queued;
}

MHD_Result answer_page(report_source& source, const std::string& job, MHD_Connection* c) {
  try {
    return answer(c, MHD_HTTP_OK, source.page(job), "text/html; charset=utf-8");
  } catch (const std::exception& e) {
    return answer(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
                  std::string("cannot draw the report: ") + e.what() + "\n", "text/plain");
  }
}

// The pages: /, /report.html, /version, and a suite's JOB/report.html and JOB/version.
MHD_Result route(report_source& source, const std::string& url, MHD_Connection* c) {
  if (url == "/" || url == "/report.html")
    return answer_page(source, "", c);
  if (url == "/version")
    return answer(c, MHD_HTTP_OK, source.version(), "text/plain");
  static const std::regex job_page(R"(/([^/]+)/(report\.html|version))");
  std::smatch match;
  if (std::regex_match(url, match, job_page)) {
    if (!source.has_job(match[1]))
      return answer(c, MHD_HTTP_NOT_FOUND, "no such job in this suite\n", "text/plain");
    if (match[2] == "version")
      return answer(c, MHD_HTTP_OK, source.version(), "text/plain");
    return answer_page(source, match[1], c);
  }
  return answer(c, MHD_HTTP_NOT_FOUND, "not found\n", "text/plain");
}

extern "C" MHD_Result on_request(void* cls, MHD_Connection* connection, const char* url,
                                 const char* method, const char*, const char*, size_t* upload_size,
                                 void** request_state) {
  auto& context = *static_cast<server_context*>(cls);
  if (*request_state == nullptr) {  // the head is in: decide now, before any body is read
    *request_state = &context;
    context.deadline.head_complete(connection);
    if (std::strcmp(method, MHD_HTTP_METHOD_GET) != 0 &&
        std::strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
      return answer(connection, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET is served\n", "text/plain");
    const char* length =
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    const char* chunked =
        MHD_lookup_connection_value(connection, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);
    // No page takes a body: refused unread, the connection closed after the answer.
    if ((length && std::strcmp(length, "0") != 0) || chunked)
      return answer(connection, MHD_HTTP_CONTENT_TOO_LARGE, "no request body is taken\n",
                    "text/plain");
    return route(context.source, url, connection);
  }
  *upload_size = 0;  // a body after an answer: dropped
  return MHD_YES;
}

extern "C" void on_connection(void* cls, MHD_Connection* connection, void**,
                              MHD_ConnectionNotificationCode code) {
  auto& deadline = static_cast<server_context*>(cls)->deadline;
  if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    deadline.closed(connection);
    return;
  }
  if (const auto* info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD))
    deadline.started(connection, info->connect_fd);
}

}  // namespace

int serve_report(const std::string& folder, const std::string& host, int port,
                 const std::atomic<bool>& stop) {
  report_source source(folder);
  try {
    source.page("");  // a folder that cannot be drawn is refused before anything listens
  } catch (const std::exception& e) {
    print_to_terminal(stderr, "error: {}\n", e.what());
    return exit_failed;
  }
  int bound = port, error = 0;
  const int listener = open_listener(host, port, bound, error);
  if (listener < 0) {
    print_to_terminal(stderr,
                      "error: --serve: cannot listen on {}:{} (in use, or not an address here)\n",
                      host, port);
    return exit_usage;
  }
  const serving_limits limits;
  header_deadline deadline(limits.head_time);
  server_context context{source, deadline};
  auto* daemon =
      MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ITC, 0, nullptr, nullptr, &on_request,
                       &context, MHD_OPTION_LISTEN_SOCKET, static_cast<MHD_socket>(listener),  //
                       MHD_OPTION_THREAD_POOL_SIZE, limits.threads,                            //
                       MHD_OPTION_CONNECTION_LIMIT, limits.connections,                        //
                       MHD_OPTION_PER_IP_CONNECTION_LIMIT, limits.per_address,                 //
                       MHD_OPTION_CONNECTION_MEMORY_LIMIT, limits.head_bytes,                  //
                       MHD_OPTION_CONNECTION_TIMEOUT, limits.idle_seconds,                     //
                       MHD_OPTION_NOTIFY_CONNECTION, &on_connection, &context,                 //
                       MHD_OPTION_END);
  if (!daemon) {
    ::close(listener);
    print_to_terminal(stderr, "error: --serve: the server could not start on {}:{}\n", host, bound);
    return exit_failed;
  }
  print_to_terminal(stdout, "serving the report of {} at http://{}:{}/ (Ctrl-C stops)\n", folder,
                    host.find(':') != std::string::npos ? "[" + host + "]" : host, bound);
  // Signal handlers may not call into the server: the flag is watched here instead.
  while (!stop.load())
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  MHD_stop_daemon(daemon);
  ::close(listener);
  return exit_ok;
}

}  // namespace troupe
