// `troupe run JOB.json` and `troupe coordinator`: a single job run through single_run (its
// validation and plan refused with exit 2 before anything is written), with Ctrl-C as the stop
// request, the plan and progress on the terminal and the result said; suites go to run_suite.
#include "apps/troupe/commands.hpp"
#include "apps/troupe/job_loading.hpp"
#include "apps/troupe/single_run.hpp"
#include "apps/troupe/stop_request.hpp"
#include "apps/troupe/suite_commands.hpp"
#include "core/checkpoint/checkpoint_store.hpp"
#include "core/errors.hpp"
#include "core/io/terminal_output.hpp"

#include <fmt/format.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <optional>

namespace troupe {
namespace {

// The first Ctrl-C (or SIGTERM) asks the run to stop at a step boundary (stop_request.hpp).
stop_request interrupt;
const std::atomic<bool>& interrupted = interrupt.asked;

extern "C" void on_interrupt(int signal) {
  note_stop_signal(interrupt, signal, "\ntroupe: stopped at once (a second interrupt)\n");
}

std::string steps_text(int64_t n) {
  return fmt::format("{} step{}", n, n == 1 ? "" : "s");
}

// `stopped`: the run ended because it was asked to (Ctrl-C, SIGTERM), not because it failed.
void print_result(const run_report& r, const std::string& folder, bool stopped) {
  if (r.succeeded()) {
    print_to_terminal(stdout, "succeeded: {} steps, {:.0f} samples/s, final train loss {:.4f}",
                      r.steps, r.samples_per_s(), r.final_train_loss.value_or(NAN));
    if (r.test_accuracy && r.metric == "accuracy")
      print_to_terminal(stdout, ", test accuracy {:.2f}%", *r.test_accuracy * 100);
    else if (r.test_accuracy)
      print_to_terminal(stdout, ", test {} {:.6g}", r.metric, *r.test_accuracy);
    if (!r.members.empty()) {
      double best = 0;
      for (const auto& m : r.members)
        best = std::max(best, m.test_accuracy.value_or(0));
      print_to_terminal(stdout, " (ensemble of {}; best member {:.2f}%)", r.members.size(),
                        best * 100);
    }
    // Messages count steps; summary.json and metrics.jsonl hold the 0-based index of the step.
    if (r.stopped_early_at)
      print_to_terminal(stdout, "; stopped early after {}", steps_text(*r.stopped_early_at + 1));
    if (r.best_step)
      print_to_terminal(stdout, "; best {} {:.4g} after {} (best_weights.pt)", r.best_metric,
                        r.best_value.value_or(NAN), steps_text(*r.best_step + 1));
    print_to_terminal(stdout, "\n");
  } else if (stopped) {
    print_to_terminal(stderr, "troupe: {} (stopped by an interrupt)\n", r.error);
  } else {
    print_to_terminal(stderr, "error: run {}: {}\n",
                      r.status == run_status::diverged ? "diverged" : "failed", r.error);
  }
  print_to_terminal(stdout, "outputs in {}\n", folder);  // flushed: said, whatever ends it after
}

// The result, and how to continue a run that can be; the exit status.
int summarize(const run_command& cmd, const single_run& run, const single_run_result& result) {
  const auto& report = result.report;
  if (!result.summary_error.empty()) {
    print_to_terminal(stderr, "error: {}\n", result.summary_error);
    return exit_failed;
  }
  const auto folder = run.dir->path();
  // Stopped as asked: the run ended with its own "interrupted ..." reason. A worker that failed
  // while a stop was pending is still a failure (exit 1), whatever the interrupt.
  const bool stopped =
      !report.succeeded() && interrupted.load() && report.error.rfind("interrupted ", 0) == 0;
  print_result(report, folder, stopped);
  if (!report.succeeded() && std::filesystem::exists(checkpoints_folder(folder) + "/latest"))
    print_to_terminal(
        stderr, "continue it with: troupe {} --resume {}{}\n",
        cmd.listen.empty() ? std::string("run") : "coordinator --listen " + cmd.listen, folder,
        cmd.local_nodes > 0 ? " --local-nodes " + std::to_string(cmd.local_nodes) : "");
  else if (stopped)
    print_to_terminal(stderr,
                      "nothing to continue from: no checkpoint was written before it stopped\n");
  if (report.succeeded())
    return exit_ok;
  return stopped ? exit_interrupted : exit_failed;
}

}  // namespace

int run_job_command(const run_command& cmd) {
  // Ctrl-C (or SIGTERM) is a request: during start-up it ends the run before its first step,
  // during training after a step, and the weights and summary.json still get written whole. (A
  // suite replaces these with its own.) Kept until the process exits: put back to the default
  // on return, an interrupt during the teardown after a run that succeeded killed the process
  // (130), and with it the result lines still in stdout's buffer.
  take_stop_signals(on_interrupt);
  std::optional<single_run> run;
  try {
    auto request = read_job_request(cmd);
    if (is_suite(request.json)) {
      if (cmd.local_nodes > 0 || !cmd.listen.empty())
        throw job_error({cmd.job.path + ": a suite runs its jobs as processes of this machine; "
                                        "--local-nodes and troupe coordinator take a single job"});
      return run_suite(cmd, request.source, request.json);
    }
    run.emplace(prepare_single_run(cmd, std::move(request)));
    if (!cmd.quiet)
      print_to_terminal(stdout, "{}", render_plan(run->plan));
    // The plan goes to stdout, progress to stderr: with `> log 2>&1` the plan must reach the
    // file before the first progress line does, as it does (print_to_terminal flushes).
    if (run->resumed)
      print_to_terminal(stderr, "resuming after {} from {}\n",
                        steps_text(run->resumed->checkpoint->step + 1), run->resumed->folder);
  } catch (const job_error& e) {
    print_problems(stderr, e);
    return exit_usage;
  } catch (const data_error& e) {  // data read to plan (tensor files): nothing has run yet
    print_to_terminal(stderr, "error: {}: data: {}\n",
                      cmd.resume.empty() ? cmd.job.path : "--resume " + cmd.resume, e.what());
    return exit_usage;
  }
  return summarize(cmd, *run, complete_single_run(cmd, *run, interrupted));
}

}  // namespace troupe
