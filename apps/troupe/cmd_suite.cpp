// `troupe run SUITE.json` for a file with `jobs` or `sweep`: each expanded job runs as a child
// `troupe run` process in its own folder, placed on the offered devices by the placement queue
// (core/suite/placement), as many at once as fit, the rest queued. The runner samples each
// child's resident memory and wall time against the job's limits, stops a job over them, and
// gives its slot to the next one; a job that fails for any reason leaves the others running.
// With stop_losers it also reads each job's metrics.jsonl as it grows and stops a job whose
// validation accuracy falls below the finished jobs' median (core/suite/stop_losers).
// At the end: summary.json for the suite, leaderboard.json, and the table printed.
#include "apps/troupe/child_process.hpp"
#include "apps/troupe/commands.hpp"
#include "apps/troupe/job_loading.hpp"
#include "apps/troupe/suite_commands.hpp"
#include "apps/troupe/suite_display.hpp"
#include "apps/troupe/suite_watch.hpp"
#include "core/checkpoint/checkpoint_store.hpp"
#include "core/data/data_source.hpp"
#include "core/errors.hpp"
#include "core/io/atomic_file.hpp"
#include "core/run/run_directory.hpp"
#include "core/run/run_plan.hpp"
#include "core/suite/suite_results.hpp"

#include <fmt/format.h>

#include <atomic>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

namespace troupe {
namespace {

using clock_type = std::chrono::steady_clock;

// How often the runner looks at its children, and how long a job over its time budget gets to
// stop after the step in progress (SIGINT) before it is killed.
constexpr auto poll_interval = std::chrono::milliseconds(50);
constexpr auto stop_grace = std::chrono::seconds(10);

std::atomic<bool> suite_interrupted{false};

extern "C" void on_suite_interrupt(int) {
  suite_interrupted.store(true);
}

std::string render_suite_plan(const suite_config& suite) {
  std::string out = fmt::format("suite {}: {} job(s)", suite.name, suite.jobs.size());
  if (suite.combinations > 1)
    out += fmt::format(" ({} entr{} x {} sweep combinations)", suite.entries,
                       suite.entries == 1 ? "y" : "ies", suite.combinations);
  out += ", devices:";
  for (const auto& d : suite.devices)
    out += fmt::format(" {} ({} threads)", d.name, d.threads);
  out += fmt::format(", at most {} at once", suite.max_concurrent);
  if (suite.stop_losers_after)
    out += fmt::format(", stop_losers after {} evaluation(s)", *suite.stop_losers_after);
  out += "\n";
  for (const auto& j : suite.jobs) {
    out += fmt::format("  {}: {} thread(s) on {}", j.job.name, j.request.threads, j.request.device);
    if (j.limits.memory_mb)
      out += fmt::format(", memory <= {} MiB", *j.limits.memory_mb);
    if (j.limits.time_s)
      out += fmt::format(", wall time <= {} s", *j.limits.time_s);
    out += fmt::format(", {}\n", j.overrides.dump());
  }
  return out;
}

// Checks every job's plan against its data (batch sizes, pipeline splits) before anything runs;
// returns each job's steps.
std::vector<int64_t> check_plans(const suite_config& suite) {
  std::vector<std::string> problems;
  std::vector<int64_t> steps;
  for (const auto& j : suite.jobs) {
    try {
      // A missing data file stops the suite here rather than failing every job that reads it.
      steps.push_back(make_run_plan(j.job, read_data_facts(j.job.data)).rules.total_steps());
    } catch (const job_error& e) {
      for (const auto& p : e.problems())
        problems.push_back("job " + j.job.name + ": " + p);
    } catch (const data_error& e) {
      problems.push_back("job " + j.job.name + ": data: " + e.what());
    }
  }
  if (!problems.empty())
    throw job_error(std::move(problems));
  return steps;
}

struct running_job {
  std::size_t index = 0;
  std::unique_ptr<child_process> child;
  clock_type::time_point started;
  std::optional<clock_type::time_point> kill_at;  ///< after a stop request
  std::string cause;                              ///< why the runner stopped it
  bool lost = false;  ///< stopped by stop_losers: the job ends stopped, not failed
  int64_t attempts = 1;
};

// Everything the loop of run_suite works on.
struct suite_run {
  const suite_config& suite;
  const run_directory& dir;
  std::string program;
  std::vector<suite_job_result>& results;
  std::vector<running_job> running;
  loser_watch watch;
  suite_display& display;

  std::string metrics_of(std::size_t job) const {
    return dir.file(results[job].name + "/metrics.jsonl");
  }
};

std::optional<double> number_at(const nlohmann::json& summary, const char* key) {
  if (summary.contains(key) && summary[key].is_number())
    return summary[key].get<double>();
  return std::nullopt;
}

void read_figures(const nlohmann::json& summary, suite_job_result& result) {
  result.validation_accuracy = number_at(summary, "validation_accuracy");
  result.validation_loss = number_at(summary, "validation_loss");
  result.test_accuracy = number_at(summary, "test_accuracy");
  result.test_loss = number_at(summary, "test_loss");
  result.final_train_loss = number_at(summary, "final_train_loss");
  result.samples_per_s = summary.value("samples_per_s", 0.0);
}

// Folds what the child left (its summary.json) into the result; writes a summary for a child
// that could not (killed), or whose end the runner decided (a limit, stop_losers).
void collect(const std::string& folder, const child_exit& exit, running_job& r,
             suite_job_result& result) {
  result.wall_s = std::chrono::duration<double>(clock_type::now() - r.started).count();
  const auto summary_path = folder + "/summary.json";
  nlohmann::json summary;
  try {
    std::ifstream in(summary_path);
    if (in)
      summary = nlohmann::json::parse(in);
  } catch (const std::exception&) {
    summary = nullptr;  // half a file cannot happen (atomic writes); a bad one is ignored
  }
  if (summary.is_object()) {
    result.status =
        parse_run_status(summary.value("status", std::string())).value_or(run_status::failed);
    result.error = summary.value("error", std::string());
    read_figures(summary, result);
  } else {
    result.status = run_status::failed;
    result.error = "the job's process ended (" + exit.describe() + ") without a summary";
  }
  if (exit.signaled || exit.code != 0)
    result.status = run_status::failed;
  if (r.lost) {
    // The job was asked to stop; however it ended (interrupted, or killed after the grace
    // period), the reason is the rule's, and it is no failure.
    result.status = run_status::stopped;
    result.error = r.cause;
  } else if (!r.cause.empty()) {
    result.status = run_status::failed;
    result.error =
        r.cause + (summary.is_object() && !result.error.empty() ? " (" + result.error + ")"
                                                                : ", " + exit.describe());
  }
  if (result.status == run_status::failed && result.error.empty())
    result.error = "the job's process ended with " + exit.describe();
  if (!summary.is_object() || !r.cause.empty()) {
    // The folder's summary must say what happened even when the job could not say it.
    if (!summary.is_object())
      summary = nlohmann::json::object();
    summary["status"] = to_string(result.status);
    summary["error"] = result.error;
    std::filesystem::create_directories(folder);
    write_file_atomically(summary_path, summary.dump(2) + "\n");
  }
}

// Asks a job to stop after the step in progress (it still writes its summary), and kills it if
// it has not within the grace period.
void ask_to_stop(running_job& r, std::string cause) {
  r.cause = std::move(cause);
  r.child->send(SIGINT);
  r.kill_at = clock_type::now() + stop_grace;
}

// Samples a running job against its limits; asks it to stop when over one.
void enforce_limits(const suite_job& job, running_job& r, suite_job_result& result) {
  const double rss = r.child->rss_mb();
  result.peak_rss_mb = std::max(result.peak_rss_mb, rss);
  if (!r.cause.empty())
    return;
  if (job.limits.memory_mb && rss > *job.limits.memory_mb) {
    // Memory is an emergency: it is killed at once rather than let to finish its step.
    r.cause = fmt::format("over its memory limit: resident {:.0f} MiB > {} MiB", rss,
                          *job.limits.memory_mb);
    r.child->send(SIGKILL);
    return;
  }
  const double elapsed = std::chrono::duration<double>(clock_type::now() - r.started).count();
  if (job.limits.time_s && elapsed > *job.limits.time_s)
    ask_to_stop(r, fmt::format("over its wall-time budget of {} s", *job.limits.time_s));
}

// stop_losers: reads what the job appended to its metrics and stops it when the rule says so.
void watch_for_loser(suite_run& s, running_job& r) {
  if (!s.watch.enabled() || !r.cause.empty())
    return;
  const auto& name = s.results[r.index].name;
  s.watch.read(r.index, s.dir.file(name + "/metrics.jsonl"));
  if (auto reason = s.watch.verdict(r.index)) {
    s.display.event(fmt::format("stopping {}: {}", name, *reason));
    r.lost = true;
    ask_to_stop(r, std::move(*reason));
  }
}

// Starts every job the queue places now, each as a child `troupe run` in its own folder.
void start_ready(suite_run& s, placement_queue& queue) {
  for (const auto& p : queue.start_ready()) {
    auto& result = s.results[p.job];
    result.device = s.suite.devices[p.device].name;
    running_job r;
    r.index = p.job;
    r.started = clock_type::now();
    try {
      r.child = std::make_unique<child_process>(
          // The job runs on the device the queue placed it on ("cuda" becomes one GPU).
          std::vector<std::string>{s.program, "run", s.dir.file("specs/" + result.name + ".json"),
                                   "--set", "device=" + result.device, "--out",
                                   s.dir.file(result.name)},
          s.dir.file("logs/" + result.name + ".log"));
    } catch (const std::exception& e) {
      result.status = run_status::failed;
      result.error = e.what();
      queue.finished(p.job);
      continue;
    }
    s.display.set_status(p.job, "running");
    s.display.event(fmt::format("started {} on {} ({} thread(s))", result.name, result.device,
                                s.suite.jobs[p.job].request.threads));
    s.running.push_back(std::move(r));
  }
}

std::string describe_end(const suite_job_result& r) {
  if (r.status != run_status::succeeded)
    return ": " + r.error;
  if (r.validation_accuracy)
    return fmt::format(": validation accuracy {:.2f}%", *r.validation_accuracy * 100);
  if (r.test_accuracy)
    return fmt::format(": test accuracy {:.2f}%", *r.test_accuracy * 100);
  return "";
}

// A job whose process crashed (not one the runner stopped) starts again while it has retries
// left: `troupe run --resume` from its newest checkpoint, else from the start.
bool retry(suite_run& s, running_job& r, suite_job_result& result) {
  if (result.status != run_status::failed || !r.cause.empty() || r.lost ||
      suite_interrupted.load() || r.attempts > s.suite.jobs[r.index].retries)
    return false;
  const auto folder = s.dir.file(result.name);
  const bool resumable = std::filesystem::exists(checkpoints_folder(folder) + "/latest");
  // The job's log holds its progress lines (no --quiet): its plan, steps and evaluations.
  auto args = resumable ? std::vector<std::string>{s.program, "run", "--resume", folder}
                        : std::vector<std::string>{s.program,
                                                   "run",
                                                   s.dir.file("specs/" + result.name + ".json"),
                                                   "--set",
                                                   "device=" + result.device,
                                                   "--out",
                                                   folder,
                                                   "--force"};
  ++r.attempts;
  result.retries = r.attempts - 1;
  s.display.event(fmt::format(
      "retrying {} ({} of {}) {}: {}", result.name, result.retries, s.suite.jobs[r.index].retries,
      resumable ? "from its newest checkpoint" : "from the start", result.error));
  try {
    r.child = std::make_unique<child_process>(
        args,
        s.dir.file("logs/" + result.name + ".retry" + std::to_string(result.retries) + ".log"));
  } catch (const std::exception& e) {
    result.error = e.what();
    return false;
  }
  return true;
}

// One look at every running job: limits, stop_losers, and the ones that ended.
void poll_running(suite_run& s, placement_queue& queue) {
  for (auto it = s.running.begin(); it != s.running.end();) {
    auto& result = s.results[it->index];
    enforce_limits(s.suite.jobs[it->index], *it, result);
    watch_for_loser(s, *it);
    if (it->kill_at && clock_type::now() > *it->kill_at)
      it->child->send(SIGKILL);
    const auto exit = it->child->poll();
    if (!exit) {
      ++it;
      continue;
    }
    collect(s.dir.file(result.name), *exit, *it, result);
    if (retry(s, *it, result)) {
      ++it;
      continue;
    }
    s.watch.finished(it->index, s.dir.file(result.name + "/metrics.jsonl"),
                     result.status == run_status::succeeded);
    s.display.set_status(it->index, to_string(result.status));
    s.display.event(
        fmt::format("{} {}{}", to_string(result.status), result.name, describe_end(result)));
    queue.finished(it->index);
    it = s.running.erase(it);
  }
}

// summary.json, leaderboard.json and the table; the exit status of the suite.
int write_outputs(const suite_config& suite, const run_directory& dir,
                  const std::vector<suite_job_result>& results) {
  try {
    write_file_atomically(dir.file("leaderboard.json"), leaderboard_json(results).dump(2) + "\n");
    write_file_atomically(dir.file("summary.json"),
                          suite_summary_json(suite.name, results).dump(2) + "\n");
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return exit_failed;
  }
  fmt::print("{}", render_leaderboard(results));
  int failed = 0;
  for (const auto& r : results)
    failed += r.status == run_status::failed || r.status == run_status::not_started ? 1 : 0;
  if (failed > 0)
    fmt::print(stderr, "error: {} of {} jobs did not succeed\n", failed, results.size());
  fmt::print("outputs in {}\n", dir.path());
  return suite_succeeded(results) ? exit_ok : exit_failed;
}

// The suite's folder before anything runs: the file as run, each job's spec, the logs folder;
// the results named. Returns the program to start the jobs with (this one).
std::string prepare_folder(const nlohmann::json& file, const suite_config& suite,
                           const run_directory& dir, std::vector<suite_job_result>& results) {
  write_file_atomically(dir.file("suite.json"), file.dump(2) + "\n");
  std::filesystem::create_directories(dir.file("specs"));
  std::filesystem::create_directories(dir.file("logs"));
  for (std::size_t i = 0; i < suite.jobs.size(); ++i) {
    results[i].name = suite.jobs[i].job.name;
    results[i].overrides = suite.jobs[i].overrides;
    write_file_atomically(dir.file("specs/" + results[i].name + ".json"),
                          suite.jobs[i].resolved.dump(2) + "\n");
  }
  return self_executable();
}

// Runs the jobs as the queue places them until all have ended, or, after Ctrl-C, until the
// running ones have stopped.
void run_jobs(suite_run& s) {
  std::vector<placement_request> requests;
  for (const auto& j : s.suite.jobs)
    requests.push_back(j.request);
  placement_queue queue(s.suite.devices, requests, s.suite.max_concurrent);
  std::signal(SIGINT, on_suite_interrupt);
  std::signal(SIGTERM, on_suite_interrupt);
  bool stopping = false;
  while (!queue.all_done()) {
    if (suite_interrupted.load() && !stopping) {
      stopping = true;  // no new job starts; the running ones stop after their step
      for (auto& r : s.running)
        r.child->send(SIGINT);
    }
    if (!stopping)
      start_ready(s, queue);
    else if (queue.running() == 0)
      break;
    std::this_thread::sleep_for(poll_interval);
    poll_running(s, queue);
    s.display.poll([&s](std::size_t j) { return s.metrics_of(j); });
  }
  s.display.close([&s](std::size_t j) { return s.metrics_of(j); });
  std::signal(SIGINT, SIG_DFL);
  std::signal(SIGTERM, SIG_DFL);
}

}  // namespace

int validate_suite(const job_source& source, const nlohmann::json& file) {
  try {
    const auto suite = parse_suite(file);
    (void)check_plans(suite);
    fmt::print("{}: valid\n{}", source.path, render_suite_plan(suite));
    return exit_ok;
  } catch (const job_error& e) {
    std::vector<std::string> named;
    for (const auto& p : e.problems())
      named.push_back(source.path + ": " + p);
    print_problems(stderr, job_error(named));
    return exit_usage;
  }
}

int run_suite(const run_command& cmd, const nlohmann::json& file) {
  suite_config suite;
  std::optional<run_directory> dir;
  std::vector<int64_t> steps;
  try {
    suite = parse_suite(file);
    steps = check_plans(suite);
    dir.emplace(cmd.out.empty() ? default_run_directory(suite.name) : cmd.out, cmd.force);
    if (!cmd.quiet)
      fmt::print("{}", render_suite_plan(suite));
    std::fflush(stdout);
  } catch (const job_error& e) {
    std::vector<std::string> named;
    for (const auto& p : e.problems())
      named.push_back(cmd.job.path + ": " + p);
    print_problems(stderr, job_error(named));
    return exit_usage;
  }

  std::vector<suite_job_result> results(suite.jobs.size());
  std::vector<job_row> rows(suite.jobs.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    rows[i].name = suite.jobs[i].job.name;
    rows[i].total_steps = steps[i];
  }
  suite_display display(std::move(rows), stdout, cmd.quiet);
  try {
    suite_run run{suite,   *dir, prepare_folder(file, suite, *dir, results),
                  results, {},   loser_watch(suite.stop_losers_after, suite.jobs.size()),
                  display};
    run_jobs(run);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return exit_failed;
  }
  for (auto& r : results)
    if (r.status == run_status::not_started)
      r.error = "the suite was interrupted first";
  return write_outputs(suite, *dir, results);
}

}  // namespace troupe
