#include "apps/troupe/single_run.hpp"

#include "actors/run_job.hpp"
#include "apps/troupe/cluster_launch.hpp"
#include "apps/troupe/job_loading.hpp"
#include "apps/troupe/progress_printer.hpp"
#include "core/checkpoint/checkpoint_store.hpp"
#include "core/collective/gloo_mesh.hpp"
#include "core/config/overrides.hpp"
#include "core/data/data_source.hpp"
#include "core/data/validation_split.hpp"
#include "core/errors.hpp"
#include "core/io/atomic_file.hpp"
#include "core/model/network.hpp"
#include "core/run/disk_fit.hpp"
#include "core/train/run_tracker.hpp"

#include <iostream>

namespace troupe {
namespace {

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
run_plan plan_job(const run_command& cmd, const job_request& request, run_options& options,
                  dataset_ptr& preloaded) {
  const auto job = parse_loaded_job(request.source, request.json);
  if (!cmd.listen.empty() && !job.cluster.enabled())
    throw job_error(
        {"/cluster/nodes: troupe coordinator needs the number of nodes to wait "
         "for (e.g. --set cluster.nodes=2)"});
  if (job.cluster.enabled() && cmd.listen.empty() && cmd.local_nodes == 0) {
    const auto nodes = std::to_string(job.cluster.nodes);
    throw job_error(
        {"/cluster/nodes: a job for " + nodes + " node(s) runs with " +
         (cmd.resume.empty()
              ? "troupe coordinator --listen HOST:PORT or troupe run --local-nodes K"
              : "troupe run --resume " + cmd.resume + " --local-nodes " + nodes +
                    ", or troupe coordinator --resume " + cmd.resume + " --listen HOST:PORT")});
  }
  // Before any folder or node: found when the run started, these failed it (exit 1) after its
  // nodes had joined.
  if (job.cluster.enabled() && job.cluster.collective == node_collective::gloo)
    if (const auto why = gloo_refusal(!cmd.tls_dir.empty() || cmd.local_tls); !why.empty())
      throw job_error({"/cluster/collective: " + why});
  if (job.cluster.enabled())
    options.cluster = make_cluster_options(cmd);
  if (job.data.kind == data_kind::tensors || job.data.kind == data_kind::csv ||
      job.data.kind == data_kind::npy || job.data.kind == data_kind::image_folder) {
    preloaded = load_dataset(job.data, job.seed);
    for (const auto& why : preloaded->skipped)
      std::cerr << "warning: left out " << why << '\n';
    return plan_named(request.source, job, facts_of(*preloaded));
  }
  // A coordinator of nodes may plan without the files (its nodes read their own copies); a run
  // on this machine reads them here, so a bad header is refused now (exit 2, no folder), as
  // `troupe validate` refuses it, not after the plan was shown with the published sizes.
  return plan_named(request.source, job,
                    job.cluster.enabled() && !cmd.listen.empty() ? describe_data(job.data)
                                                                 : read_data_facts(job.data));
}

// The run's folder, claimed before the plan is shown (an existing --out is refused at once, not
// under a screenful of plan), once its checkpoints are known to fit on its disk. A resumed run's
// folder is locked already (`resume_lock`).
run_directory claim_folder(const run_command& cmd, const run_plan& plan,
                           folder_lock_ptr resume_lock) {
  const bool resumed = resume_lock != nullptr;
  const auto folder =
      resumed ? cmd.resume : (cmd.out.empty() ? default_run_directory(plan.job.name) : cmd.out);
  auto free_bytes = disk_free_bytes(folder);
  if (resumed && free_bytes >= 0)  // the checkpoints there now make way for the new ones
    free_bytes += bytes_under(checkpoints_folder(folder));
  check_checkpoints_fit(plan, folder, free_bytes);
  auto dir = resumed ? run_directory::reopen(folder, std::move(resume_lock))
                     : run_directory(folder, cmd.force, folder_kind::run, cmd.job.path);
  dir.reserve_summary_space();
  return dir;
}

// Loads the data and runs the plan, with progress on the terminal and `stop` as a stop request;
// writes the weights of a run that succeeded.
run_report train(const run_command& cmd, const single_run& run, const std::atomic<bool>& stop) {
  const auto& plan = run.plan;
  const auto& dir = *run.dir;
  auto options = run.options;
  dir.write_job(plan.job);
  // The plan as printed, for `troupe report` (and for whoever reads the folder later).
  write_file_atomically(dir.file("plan.txt"), render_plan(plan));
  jsonl_writer metrics(dir.file("metrics.jsonl"));
  options.checkpoint_dir = dir.path();
  if (run.resumed) {
    options.resume_from = run.resumed->checkpoint;
    const auto step = run.resumed->checkpoint->step;
    // On the run's clock, which goes on from the checkpoint's (a report drew the resume at 0).
    const double t = run.resumed->checkpoint->progress.at("tracker").value("elapsed_s", 0.0);
    metrics.write(to_json(records::resumed{step, run.resumed->folder, run.resumed->skipped, t}));
    // A phase that begins at the next step was recorded before the checkpoint, among the
    // records a resume supersedes: the switch is recorded again.
    const auto& phases = plan.schedule;
    if (!plan.rules.is_last(step) && phases.policy_at(step + 1) != phases.policy_at(step))
      metrics.write(to_json(records::phase{step + 1, to_string(phases.policy_at(step + 1)), t}));
  }
  const auto data = run.preloaded ? run.preloaded : load_dataset(plan.job.data, plan.job.seed);
  if (plan.data.validation_rows > 0) {
    const auto rows = data->train.size() + data->validation.size();
    dir.write_validation_rows(rows,
                              validation_indices(rows, plan.job.data.validation, plan.job.seed));
  }
  progress_printer printer(stderr, cmd.quiet);
  options.metrics = &metrics;
  options.on_progress = [&printer](const progress_update& p) { printer.update(p); };
  options.stop_requested = &stop;
  if (stop.load())
    throw std::runtime_error(run.resumed
                                 ? "interrupted before its first step after resuming at " +
                                       std::to_string(run.resumed->checkpoint->step + 1) + " steps"
                                 : std::string("interrupted before the first step"));
  std::optional<local_nodes> nodes;
  if (cmd.local_nodes > 0) {
    nodes.emplace(cmd.local_nodes, dir.path() + "/nodes", cmd.local_tls);
    nodes->attach(*options.cluster);  // token, TLS, start once listening, stop when done
  }
  auto report = run_job(plan, data, options);
  printer.close();
  // A weights file that cannot be written (a full disk) fails the run, but its summary keeps
  // what the run measured: steps, losses, accuracy.
  try {
    if (report.final_weights.defined())
      dir.write_weights(named_weights(plan, report.final_weights));
    if (report.final_weights.defined() && plan.job.model.kind == model_kind::torchscript)
      dir.write_bytes("final_model.pt", script_with_weights(plan.job.model, report.final_weights));
    if (report.best_weights.defined())
      dir.write_weights(named_weights(plan, report.best_weights), "best_weights.pt");
    for (std::size_t k = 0; k < report.member_weights.size(); ++k)
      dir.write_weights(report.member_weights[k], member_weights_file(static_cast<int64_t>(k)));
  } catch (const std::exception& e) {
    report.status = run_status::failed;
    report.error = "the weights could not be written: " + message_of(e);
    report.final_weights = at::Tensor();
    report.best_weights = at::Tensor();
    report.member_weights.clear();
  }
  return report;
}

}  // namespace

job_request read_job_request(const run_command& cmd) {
  job_request request;
  request.source = cmd.job;
  if (cmd.local_nodes > 0) {  // validated like any other key, e.g. against replicas
    request.source.labels.resize(request.source.sets.size());
    request.source.sets.push_back("cluster.nodes=" + std::to_string(cmd.local_nodes));
    request.source.labels.push_back("--local-nodes " + std::to_string(cmd.local_nodes));
  }
  if (!cmd.resume.empty()) {
    request.resumed = find_resume_point(cmd.resume);
    request.json = resumed_job_json(cmd, *request.resumed, request.source);
  } else {
    request.json = load_job_json(request.source);
  }
  return request;
}

job_request job_request_from_json(const std::string& label, nlohmann::json json,
                                  const std::vector<std::string>& sets) {
  auto created = apply_overrides(json, sets);
  return job_request{job_source{label, sets, std::move(created), {}}, std::move(json),
                     std::nullopt};
}

single_run prepare_single_run(const run_command& cmd, job_request request) {
  single_run run;
  run.plan = plan_job(cmd, request, run.options, run.preloaded);
  if (request.resumed)
    check_resume_matches(*request.resumed, run.plan);
  run.dir.emplace(claim_folder(cmd, run.plan, request.resumed ? request.resumed->lock : nullptr));
  run.resumed = std::move(request.resumed);
  return run;
}

single_run_result complete_single_run(const run_command& cmd, single_run& run,
                                      const std::atomic<bool>& stop) {
  single_run_result result;
  try {
    result.report = train(cmd, run, stop);
  } catch (const std::exception& e) {
    // Bad data files and I/O failures end the run here; it is still summarized below, a resumed
    // one with the figures of its checkpoint (a summary of none undid its steps and rows).
    result.report.status = run_status::failed;
    result.report.error = message_of(e);
    result.report.replicas = run.plan.job.parallelism.replicas;
    if (run.resumed) {
      try {
        run_tracker held(run.plan.workers, run.plan.rules, nullptr);
        held.restore(run.resumed->checkpoint->progress.at("tracker"));
        result.report = held.report(message_of(e), at::Tensor());
      } catch (const std::exception&) {  // checked when it was found: kept as it is otherwise
      }
    }
  }
  try {
    run.dir->write_summary(result.report, run.plan.job);
  } catch (const std::exception& e) {
    result.summary_error = e.what();
  }
  return result;
}

}  // namespace troupe
