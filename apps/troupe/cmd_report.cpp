// `troupe report DIR`: writes DIR/report.html, the page of a run's or a suite's output folder
// (for a suite, each job's page too, which the suite's page links to); with --serve, serves the
// page and keeps it current while the run or suite writes.
#include "apps/troupe/commands.hpp"
#include "apps/troupe/report_server.hpp"
#include "core/cluster/address.hpp"
#include "core/errors.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/terminal_output.hpp"
#include "core/report/report_page.hpp"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <filesystem>

namespace troupe {
namespace {

std::atomic<bool> stop_serving{false};

extern "C" void on_stop_signal(int) {
  stop_serving.store(true);
}

void write_page(const std::string& folder, const std::string& html) {
  write_file_atomically((std::filesystem::path(folder) / "report.html").string(), html);
}

int write_report(const std::string& folder) {
  if (is_suite_folder(folder)) {
    auto suite = read_suite_history(folder);
    for (const auto& job : suite.jobs)
      if (job.run)
        write_page(job.run->folder, render_run_page(*job.run, {}));
    write_page(folder, render_suite_page(suite, {}));
  } else {
    write_page(folder, render_run_page(read_run_history(folder), {}));
  }
  print_to_terminal(stdout, "wrote {}\n", (std::filesystem::path(folder) / "report.html").string());
  return exit_ok;
}

}  // namespace

int run_report_command(const report_command& cmd) {
  try {
    // A missing folder is a bad command line (exit 2), as for the other commands.
    std::error_code ec;
    if (!std::filesystem::is_directory(cmd.folder, ec))
      throw job_error({cmd.folder + ": not a folder" +
                       (ec && ec != std::errc::no_such_file_or_directory
                            ? " this user can read (" + ec.message() + ")"
                            : std::string()) +
                       " (give a run's or a suite's output folder)"});
    if (cmd.serve.empty())
      return write_report(cmd.folder);
    const auto address = parse_host_port(cmd.serve, "127.0.0.1", "--serve");
    if (!is_loopback(address.host))
      print_to_terminal(
          stderr,
          "warning: --serve {}: the report (job, plan and metrics) is readable by anyone "
          "who reaches this address, without a password\n",
          cmd.serve);
    std::signal(SIGINT, on_stop_signal);
    std::signal(SIGTERM, on_stop_signal);
    return serve_report(cmd.folder, address.host, address.port, stop_serving);
  } catch (const job_error& e) {
    for (const auto& p : e.problems())
      print_to_terminal(stderr, "error: {}\n", p);
    return exit_usage;
  } catch (const std::exception& e) {
    print_to_terminal(stderr, "error: {}\n", e.what());
    return exit_failed;
  }
}

}  // namespace troupe
