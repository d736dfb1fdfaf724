// `troupe run JOB.json`: validates the job, prepares the run folder, loads the data, trains with
// the embedded actor system and writes what the run leaves (see core/io/run_directory.hpp).
#include "actors/run_cluster.hpp"
#include "actors/run_training.hpp"
#include "apps/troupe/cluster_launch.hpp"
#include "apps/troupe/commands.hpp"
#include "apps/troupe/job_loading.hpp"
#include "apps/troupe/progress_printer.hpp"
#include "apps/troupe/suite_commands.hpp"
#include "core/errors.hpp"
#include "core/io/run_directory.hpp"
#include "core/model/flat_parameters.hpp"
#include "core/model/model_builder.hpp"
#include "core/train/load_dataset.hpp"
#include "core/train/plan.hpp"
#include "core/train/run_ensemble.hpp"

#include <fmt/format.h>

#include <atomic>
#include <csignal>
#include <optional>

namespace troupe {
namespace {

std::atomic<bool> interrupted{false};

extern "C" void on_interrupt(int) {
  interrupted.store(true);
}

// Names the flat weights like the model's parameters (PyTorch state_dict keys).
std::vector<std::pair<std::string, at::Tensor>> named_weights(const job_config& job,
                                                              int64_t classes,
                                                              const at::Tensor& flat) {
  auto model = build_model(job.model, classes);
  flat_parameters layout(*model);
  return unflatten(flat, layout.layout());
}

void print_result(const run_report& r, const std::string& folder) {
  if (r.status == "succeeded") {
    fmt::print("succeeded: {} steps, {:.0f} samples/s, final train loss {:.4f}", r.steps,
               r.samples_per_s(), r.final_train_loss.value_or(NAN));
    if (r.test_accuracy)
      fmt::print(", test accuracy {:.2f}%", *r.test_accuracy * 100);
    if (!r.members.empty()) {
      double best = 0;
      for (const auto& m : r.members)
        best = std::max(best, m.test_accuracy.value_or(0));
      fmt::print(" (ensemble of {}; best member {:.2f}%)", r.members.size(), best * 100);
    }
    fmt::print("\n");
  } else {
    fmt::print(stderr, "error: run failed: {}\n", r.error);
  }
  fmt::print("outputs in {}\n", folder);
}

}  // namespace

int run_job(const run_command& cmd) {
  job_config job;
  std::optional<run_directory> dir;
  std::optional<cluster_options> cluster;
  try {
    auto source = cmd.job;
    if (cmd.local_nodes > 0)  // validated like any other key, e.g. against replicas
      source.sets.push_back("cluster.nodes=" + std::to_string(cmd.local_nodes));
    const auto json = load_job_json(source);
    if (is_suite(json)) {
      if (cmd.local_nodes > 0 || !cmd.listen.empty())
        throw job_error({cmd.job.path + ": a suite runs its jobs as processes of this machine; "
                                        "--local-nodes and troupe coordinator take a single job"});
      return run_suite(cmd, json);
    }
    job = parse_loaded_job(source, json);
    if (!cmd.listen.empty() && !job.cluster.enabled())
      throw job_error(
          {"/cluster/nodes: troupe coordinator needs the number of nodes to wait "
           "for (e.g. --set cluster.nodes=2)"});
    if (job.cluster.enabled() && cmd.listen.empty() && cmd.local_nodes == 0)
      throw job_error({"/cluster/nodes: a job for " + std::to_string(job.cluster.nodes) +
                       " node(s) runs with troupe coordinator --listen HOST:PORT or troupe run "
                       "--local-nodes K"});
    if (job.cluster.enabled())
      cluster = make_cluster_options(cmd);
    const auto plan = make_plan(job, expected_train_samples(job.data), 10);
    if (!cmd.quiet)
      fmt::print("{}", render_plan(job, plan));
    dir.emplace(cmd.out.empty() ? default_run_directory(job.name) : cmd.out, cmd.force);
  } catch (const job_error& e) {
    print_problems(stderr, e);
    return exit_usage;
  }

  run_report report;
  try {
    dir->write_job(job);
    jsonl_writer metrics(dir->file("metrics.jsonl"));
    const auto data = load_dataset(job.data, job.seed);
    // The data set may be smaller than the plan assumed (a synthetic set, a trimmed file).
    make_plan(job, data->train.size(), data->classes);

    progress_printer printer(stderr, cmd.quiet);
    run_options options;
    options.metrics = &metrics;
    options.on_progress = [&printer](const progress_update& p) { printer.update(p); };
    options.stop_requested = &interrupted;
    std::signal(SIGINT, on_interrupt);
    std::signal(SIGTERM, on_interrupt);
    if (cluster) {
      std::optional<local_nodes> nodes;
      if (cmd.local_nodes > 0) {
        nodes.emplace(cmd.local_nodes, dir->path() + "/nodes");
        cluster->token = nodes->token();
        cluster->on_listening = [&nodes](uint16_t port) { nodes->start(port); };
      }
      report = run_cluster(job, data, options, *cluster);
    } else {
      report = job.ensemble.enabled() ? run_ensemble(job, data, options)
                                      : run_training(job, data, options);
    }
    std::signal(SIGINT, SIG_DFL);
    std::signal(SIGTERM, SIG_DFL);
    printer.close();
    if (report.final_weights.defined())
      dir->write_weights(named_weights(job, data->classes, report.final_weights));
    for (std::size_t k = 0; k < report.member_weights.size(); ++k)
      dir->write_weights(report.member_weights[k], member_weights_file(static_cast<int64_t>(k)));
  } catch (const std::exception& e) {
    // Bad data files and I/O failures end the run here; it is still summarized below.
    report.status = "failed";
    report.error = e.what();
    report.replicas = job.parallelism.replicas;
  }
  try {
    dir->write_summary(report, job);
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return exit_failed;
  }
  print_result(report, dir->path());
  return report.status == "succeeded" ? exit_ok : exit_failed;
}

}  // namespace troupe
