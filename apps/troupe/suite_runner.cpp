// The suite runner's loop: see suite_runner.hpp.
#include "apps/troupe/suite_runner.hpp"

#include "apps/troupe/commands.hpp"
#include "apps/troupe/stop_request.hpp"
#include "core/checkpoint/checkpoint_store.hpp"
#include "core/io/atomic_file.hpp"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <thread>

namespace troupe {
namespace {

// How often the runner looks at its children, and how long a job over its time budget gets to
// stop after the step in progress (SIGINT) before it is killed.
constexpr auto poll_interval = std::chrono::milliseconds(50);
constexpr auto stop_grace = std::chrono::seconds(10);

// Ctrl-C, SIGTERM or SIGHUP to the runner, counted: each one is passed on to the jobs.
std::atomic<int> suite_interrupts{0};

extern "C" void on_suite_interrupt(int) {
  suite_interrupts.fetch_add(1);
}

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
  // A job that refused to run (exit 2: its folder held another run's files, or was in use) left
  // nothing: a summary.json there is another run's, and its figures are not this job's.
  const bool refused = !exit.signaled && exit.code == exit_usage;
  nlohmann::json summary;
  try {
    std::ifstream in(summary_path);
    if (in && !refused)
      summary = nlohmann::json::parse(in);
  } catch (const std::exception&) {
    summary = nullptr;  // half a file cannot happen (atomic writes); a bad one is ignored
  }
  if (refused) {
    const auto why = last_log_line(r.log, "error: ");  // what `troupe run` said
    result.status = run_status::failed;
    result.error = "the job's process refused to run (exit status 2)" +
                   (why.empty() ? std::string() : ": " + why);
    return;  // its folder is not the runner's to write in either
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
  // A diverged run exits 1 with its summary saying so; any other non-zero end is a failure.
  if (exit.signaled || (exit.code != 0 && result.status != run_status::diverged))
    result.status = run_status::failed;
  // Ctrl-C reaches the suite's whole process group: a job still starting (before its own handler
  // was in place) dies of it with no summary, one training stops after its step. Either was
  // stopped with the suite, not a failure of its own.
  const bool stopped_with_suite =
      suite_was_interrupted() &&
      ((exit.signaled &&
        (exit.signal == SIGINT || exit.signal == SIGTERM || exit.signal == SIGHUP)) ||
       (!exit.signaled && exit.code == exit_interrupted));
  // A job asked to stop (asha, stop_losers, a time budget) that had trained every step before
  // the request reached it ended as it would have: succeeded, ranked (it was listed stopped).
  const bool finished_first = !exit.signaled && exit.code == exit_ok &&
                              result.status == run_status::succeeded && !r.cause.empty();
  if (finished_first) {
    r.cause.clear();
    r.lost = false;
  }
  if (r.lost) {
    // The job was asked to stop; however it ended (interrupted, or killed after the grace
    // period), the reason is the rule's, and it is no failure.
    result.status = run_status::stopped;
    result.error = r.cause;
  } else if (stopped_with_suite) {
    result.status = run_status::stopped;
    if (!summary.is_object())  // still starting, or a second interrupt ended it at once
      result.error = "stopped by an interrupt of the suite before it wrote its summary";
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
    give_up_summary_space(folder);  // the job's reserve for the summary it could not write
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
    r.log = s.dir.file("logs/" + result.name + ".log");
    try {
      // The job runs on the device the queue placed it on ("cuda" becomes one GPU).
      std::vector<std::string> argv{s.program,
                                    "run",
                                    s.dir.file("specs/" + result.name + ".json"),
                                    "--set",
                                    "device=" + result.device,
                                    "--out",
                                    s.dir.file(result.name)};
      if (s.force)
        argv.push_back("--force");
      r.child = std::make_unique<child_process>(argv, r.log);
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
  // A regression job has losses alone.
  if (r.validation_loss)
    return fmt::format(": validation loss {:.6g}", *r.validation_loss);
  if (r.test_loss)
    return fmt::format(": test loss {:.6g}", *r.test_loss);
  return "";
}

// A job whose process crashed (not one the runner stopped) starts again while it has retries
// left: `troupe run --resume` from its newest checkpoint, else from the start.
bool retry(suite_run& s, running_job& r, suite_job_result& result) {
  if (result.status != run_status::failed || !r.cause.empty() || r.lost ||
      suite_was_interrupted() || r.attempts > s.suite.jobs[r.index].retries)
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
  if (!resumable)
    s.watch.restart(r.index);
  s.display.event(fmt::format(
      "retrying {} ({} of {}) {}: {}", result.name, result.retries, s.suite.jobs[r.index].retries,
      resumable ? "from its newest checkpoint" : "from the start", result.error));
  r.log = s.dir.file("logs/" + result.name + ".retry" + std::to_string(result.retries) + ".log");
  try {
    r.child = std::make_unique<child_process>(args, r.log);
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

}  // namespace

void run_jobs(suite_run& s) {
  std::vector<placement_request> requests;
  for (const auto& j : s.suite.jobs)
    requests.push_back(j.request);
  placement_queue queue(s.suite.devices, requests, s.suite.max_concurrent);
  take_stop_signals(on_suite_interrupt);
  bool stopping = false;
  int passed_on = 0;
  while (!queue.all_done()) {
    // Each interrupt goes on to the running jobs: the first stops them after their step, one a
    // second or more later ends them at once (stop_request.hpp), as it would a lone run.
    if (const int interrupts = suite_interrupts.load(); interrupts > passed_on) {
      passed_on = interrupts;
      stopping = true;  // no new job starts
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
  release_stop_signals();
}

bool suite_was_interrupted() {
  return suite_interrupts.load() > 0;
}

}  // namespace troupe
