// `troupe run JOB.json` and `troupe coordinator`: validates the job and plans it (nothing is
// written when either fails: exit 2), prepares the run folder, loads the data, runs the plan
// through run_job and writes what the run leaves (see core/run/run_directory.hpp).
#include "actors/run_job.hpp"
#include "apps/troupe/cluster_launch.hpp"
#include "apps/troupe/commands.hpp"
#include "apps/troupe/job_loading.hpp"
#include "apps/troupe/progress_printer.hpp"
#include "apps/troupe/resume_point.hpp"
#include "apps/troupe/suite_commands.hpp"
#include "core/checkpoint/checkpoint_store.hpp"
#include "core/config/overrides.hpp"
#include "core/data/data_source.hpp"
#include "core/data/validation_split.hpp"
#include "core/errors.hpp"
#include "core/io/atomic_file.hpp"
#include "core/model/network.hpp"
#include "core/run/disk_fit.hpp"
#include "core/run/run_directory.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <csignal>
#include <ctime>
#include <filesystem>
#include <optional>

namespace troupe {
namespace {

std::atomic<bool> interrupted{false};

// The first Ctrl-C (or SIGTERM) asks the run to stop at a step boundary; another one at least a
// second later, while that request waits (a step that does not end: a worker stuck in a library
// call), ends the process at once. Sooner it is the same interrupt delivered twice (a terminal's
// Ctrl-C reaches the whole process group, and `timeout` forwards it too). Every file troupe
// writes is replaced whole or appended a record at a time, so what is on disk stays readable.
std::atomic<int64_t> first_interrupt_ns{0};

int64_t monotonic_ns() {  // async-signal-safe
  timespec now{};
  ::clock_gettime(CLOCK_MONOTONIC, &now);
  return static_cast<int64_t>(now.tv_sec) * 1'000'000'000 + now.tv_nsec;
}

extern "C" void on_interrupt(int signal) {
  const auto now = monotonic_ns();
  if (!interrupted.exchange(true)) {
    first_interrupt_ns.store(now);
    return;
  }
  if (now - first_interrupt_ns.load() < 1'000'000'000)
    return;
  static const char message[] = "\ntroupe: stopped at once (a second interrupt)\n";
  [[maybe_unused]] const auto n = ::write(STDERR_FILENO, message, sizeof message - 1);
  ::_exit(128 + signal);
}

std::string steps_text(int64_t n) {
  return fmt::format("{} step{}", n, n == 1 ? "" : "s");
}

// `stopped`: the run ended because it was asked to (Ctrl-C, SIGTERM), not because it failed.
void print_result(const run_report& r, const std::string& folder, bool stopped) {
  if (r.succeeded()) {
    fmt::print("succeeded: {} steps, {:.0f} samples/s, final train loss {:.4f}", r.steps,
               r.samples_per_s(), r.final_train_loss.value_or(NAN));
    if (r.test_accuracy && r.metric == "accuracy")
      fmt::print(", test accuracy {:.2f}%", *r.test_accuracy * 100);
    else if (r.test_accuracy)
      fmt::print(", test {} {:.6g}", r.metric, *r.test_accuracy);
    if (!r.members.empty()) {
      double best = 0;
      for (const auto& m : r.members)
        best = std::max(best, m.test_accuracy.value_or(0));
      fmt::print(" (ensemble of {}; best member {:.2f}%)", r.members.size(), best * 100);
    }
    // Messages count steps; summary.json and metrics.jsonl hold the 0-based index of the step.
    if (r.stopped_early_at)
      fmt::print("; stopped early after {}", steps_text(*r.stopped_early_at + 1));
    if (r.best_step)
      fmt::print("; best {} {:.4g} after {} (best_weights.pt)", r.best_metric,
                 r.best_value.value_or(NAN), steps_text(*r.best_step + 1));
    fmt::print("\n");
  } else if (stopped) {
    fmt::print(stderr, "troupe: {} (stopped by an interrupt)\n", r.error);
  } else {
    fmt::print(stderr, "error: run {}: {}\n",
               r.status == run_status::diverged ? "diverged" : "failed", r.error);
  }
  fmt::print("outputs in {}\n", folder);
}

// The job a checkpoint was written under, with --local-nodes' node count applied; `source`
// then names the checkpoint in messages. Other overrides are refused: the run continues as it
// began.
nlohmann::json resumed_job_json(const run_command& cmd, const resume_point& point,
                                job_source& source) {
  if (!cmd.job.path.empty() || !cmd.job.sets.empty())
    throw job_error({"--resume " + point.folder +
                     ": the run continues with the job of its checkpoint; give no job file "
                     "and no --set"});
  source.path = point.folder + "/state.json";
  auto json = point.checkpoint->job;
  for (const auto& assignment : source.sets)  // --local-nodes' node count only
    apply_override(json, assignment);
  return json;
}

// A single job, checked and planned; throws job_error for anything that stops it from running.
// Tensor files have no header to plan from: they are loaded (and checked) whole here, once, and
// handed back in `preloaded` for the run to train on.
run_plan plan_job(const run_command& cmd, const job_source& source, const nlohmann::json& json,
                  run_options& options, dataset_ptr& preloaded) {
  const auto job = parse_loaded_job(source, json);
  if (!cmd.listen.empty() && !job.cluster.enabled())
    throw job_error(
        {"/cluster/nodes: troupe coordinator needs the number of nodes to wait "
         "for (e.g. --set cluster.nodes=2)"});
  if (job.cluster.enabled() && cmd.listen.empty() && cmd.local_nodes == 0)
    throw job_error({"/cluster/nodes: a job for " + std::to_string(job.cluster.nodes) +
                     " node(s) runs with troupe coordinator --listen HOST:PORT or troupe run "
                     "--local-nodes K"});
  if (job.cluster.enabled())
    options.cluster = make_cluster_options(cmd);
  if (job.data.kind == data_kind::tensors || job.data.kind == data_kind::csv ||
      job.data.kind == data_kind::npy || job.data.kind == data_kind::image_folder) {
    preloaded = load_dataset(job.data, job.seed);
    for (const auto& why : preloaded->skipped)
      std::cerr << "warning: left out " << why << '\n';
    return make_run_plan(job, facts_of(*preloaded));
  }
  return make_run_plan(job, describe_data(job.data));
}

// Loads the data and runs the plan, with progress on the terminal and Ctrl-C as a stop request;
// writes the weights of a run that succeeded.
run_report train(const run_command& cmd, const run_plan& plan, const run_directory& dir,
                 run_options options, const std::optional<resume_point>& resumed,
                 dataset_ptr preloaded) {
  dir.write_job(plan.job);
  // The plan as printed, for `troupe report` (and for whoever reads the folder later).
  write_file_atomically(dir.file("plan.txt"), render_plan(plan));
  jsonl_writer metrics(dir.file("metrics.jsonl"));
  options.checkpoint_dir = dir.path();
  if (resumed) {
    options.resume_from = resumed->checkpoint;
    metrics.write(to_json(
        records::resumed{resumed->checkpoint->step, resumed->folder, resumed->skipped, 0.0}));
  }
  const auto data = preloaded ? preloaded : load_dataset(plan.job.data, plan.job.seed);
  if (plan.data.validation_rows > 0) {
    const auto rows = data->train.size() + data->validation.size();
    dir.write_validation_rows(rows,
                              validation_indices(rows, plan.job.data.validation, plan.job.seed));
  }
  progress_printer printer(stderr, cmd.quiet);
  options.metrics = &metrics;
  options.on_progress = [&printer](const progress_update& p) { printer.update(p); };
  options.stop_requested = &interrupted;
  if (interrupted.load())
    throw std::runtime_error("interrupted before the first step");
  std::optional<local_nodes> nodes;
  if (cmd.local_nodes > 0) {
    nodes.emplace(cmd.local_nodes, dir.path() + "/nodes", cmd.local_tls);
    nodes->attach(*options.cluster);  // token, TLS, start once listening, stop when done
  }
  auto report = run_job(plan, data, options);
  printer.close();
  if (report.final_weights.defined())
    dir.write_weights(named_weights(plan, report.final_weights));
  if (report.final_weights.defined() && plan.job.model.kind == model_kind::torchscript)
    dir.write_bytes("final_model.pt", script_with_weights(plan.job.model, report.final_weights));
  if (report.best_weights.defined())
    dir.write_weights(named_weights(plan, report.best_weights), "best_weights.pt");
  for (std::size_t k = 0; k < report.member_weights.size(); ++k)
    dir.write_weights(report.member_weights[k], member_weights_file(static_cast<int64_t>(k)));
  return report;
}

// The run's folder, claimed before the plan is shown (an existing --out is refused at once, not
// under a screenful of plan), once its checkpoints are known to fit on its disk.
run_directory claim_folder(const run_command& cmd, const run_plan& plan, bool resumed) {
  const auto folder =
      resumed ? cmd.resume : (cmd.out.empty() ? default_run_directory(plan.job.name) : cmd.out);
  check_checkpoints_fit(plan, folder, disk_free_bytes(folder));
  auto dir = resumed ? run_directory::reopen(folder) : run_directory(folder, cmd.force);
  dir.reserve_summary_space();
  return dir;
}

// summary.json, the result, and how to continue a run that can be; the exit status.
int summarize(const run_command& cmd, const run_plan& plan, const run_directory& dir,
              const run_report& report) {
  try {
    dir.write_summary(report, plan.job);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return exit_failed;
  }
  // Stopped as asked: the run ended with its own "interrupted ..." reason. A worker that failed
  // while a stop was pending is still a failure (exit 1), whatever the interrupt.
  const bool stopped =
      !report.succeeded() && interrupted.load() && report.error.rfind("interrupted ", 0) == 0;
  print_result(report, dir.path(), stopped);
  if (!report.succeeded() && std::filesystem::exists(checkpoints_folder(dir.path()) + "/latest"))
    fmt::print(stderr, "continue it with: troupe {} --resume {}{}\n",
               cmd.listen.empty() ? std::string("run") : "coordinator --listen " + cmd.listen,
               dir.path(),
               cmd.local_nodes > 0 ? " --local-nodes " + std::to_string(cmd.local_nodes) : "");
  else if (stopped)
    fmt::print(stderr, "nothing to continue from: no checkpoint was written before it stopped\n");
  if (report.succeeded())
    return exit_ok;
  return stopped ? exit_interrupted : exit_failed;
}

}  // namespace

int run_job_command(const run_command& cmd) {
  // Ctrl-C (or SIGTERM) is a request: during start-up it ends the run before its first step,
  // during training after a step, and the weights and summary.json still get written whole. (A
  // suite replaces these with its own.)
  std::signal(SIGINT, on_interrupt);
  std::signal(SIGTERM, on_interrupt);
  struct default_signals {
    ~default_signals() {
      std::signal(SIGINT, SIG_DFL);
      std::signal(SIGTERM, SIG_DFL);
    }
  } restore_on_return;
  std::optional<run_plan> plan;
  dataset_ptr preloaded;  // tensor files, read once to plan and train
  std::optional<run_directory> dir;
  run_options options;
  std::optional<resume_point> resumed;
  try {
    auto source = cmd.job;
    if (cmd.local_nodes > 0)  // validated like any other key, e.g. against replicas
      source.sets.push_back("cluster.nodes=" + std::to_string(cmd.local_nodes));
    if (!cmd.resume.empty())
      resumed = find_resume_point(cmd.resume);
    const auto json = resumed ? resumed_job_json(cmd, *resumed, source) : load_job_json(source);
    if (is_suite(json)) {
      if (cmd.local_nodes > 0 || !cmd.listen.empty())
        throw job_error({cmd.job.path + ": a suite runs its jobs as processes of this machine; "
                                        "--local-nodes and troupe coordinator take a single job"});
      return run_suite(cmd, json);
    }
    plan = plan_job(cmd, source, json, options, preloaded);
    if (resumed)
      check_resume_matches(*resumed, *plan);
    dir.emplace(claim_folder(cmd, *plan, resumed.has_value()));
    if (!cmd.quiet)
      fmt::print("{}", render_plan(*plan));
    // The plan goes to stdout, progress to stderr: with `> log 2>&1` the plan must reach the
    // file before the first progress line does.
    std::fflush(stdout);
    if (resumed)
      fmt::print(stderr, "resuming after {} from {}\n", steps_text(resumed->checkpoint->step + 1),
                 resumed->folder);
  } catch (const job_error& e) {
    print_problems(stderr, e);
    return exit_usage;
  } catch (const data_error& e) {  // data read to plan (tensor files): nothing has run yet
    fmt::print(stderr, "error: {}: data: {}\n",
               cmd.resume.empty() ? cmd.job.path : "--resume " + cmd.resume, e.what());
    return exit_usage;
  }
  run_report report;
  try {
    report = train(cmd, *plan, *dir, options, resumed, std::move(preloaded));
  } catch (const std::exception& e) {
    // Bad data files and I/O failures end the run here; it is still summarized below.
    report.status = run_status::failed;
    report.error = message_of(e);
    report.replicas = plan->job.parallelism.replicas;
  }
  return summarize(cmd, *plan, *dir, report);
}

}  // namespace troupe
