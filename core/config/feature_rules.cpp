#include "core/config/feature_rules.hpp"

#include "core/config/json_fields.hpp"
#include "core/errors.hpp"

#include <utility>

namespace troupe {
namespace {

using problem_list = std::vector<std::string>;

void check_batch(const job_config& job, problem_list& problems) {
  if (reported_at(problems, "/training/batch_size") ||
      reported_at(problems, "/parallelism/replicas"))
    return;
  const auto& par = job.parallelism;
  if (job.training.batch_size < par.replicas)
    problems.push_back("/training/batch_size: must be at least parallelism.replicas (" +
                       std::to_string(par.replicas) +
                       ") so every replica gets a sample each step, got " +
                       std::to_string(job.training.batch_size));
  // A pipeline replica's rows must fill every micro-batch (the smallest shard is the floor).
  if (par.micro_batches > 1 && !reported_at(problems, "/parallelism/micro_batches") &&
      job.training.batch_size / par.replicas < par.micro_batches)
    problems.push_back("/parallelism/micro_batches: " + std::to_string(par.micro_batches) +
                       " micro-batches need at least that many rows per replica, but batch_size " +
                       std::to_string(job.training.batch_size) + " over " +
                       std::to_string(par.replicas) + " replica(s) leaves " +
                       std::to_string(job.training.batch_size / par.replicas));
}

// Pipelines flush and step together: only sync fits them.
void check_pipeline(const job_config& job, problem_list& problems) {
  const auto& par = job.parallelism;
  if (par.pipelined() && par.policy != policy_kind::sync &&
      !reported_at(problems, "/parallelism/policy") &&
      !reported_at(problems, "/parallelism/stages") &&
      !reported_at(problems, "/parallelism/micro_batches"))
    problems.push_back(std::string("/parallelism/policy: must be \"sync\" with stages or "
                                   "micro_batches above 1 (pipelines flush and step together), "
                                   "got \"") +
                       to_string(par.policy) + "\"");
}

// What each precision runs: bf16 everywhere but pipelines; fp16 where float16 autocast exists
// (CUDA) and every replica applies the gradient its own loss scaler scaled (sync, local_sgd,
// schedules: a parameter server would skip steps its workers' scalers never hear of).
void check_precision(const job_config& job, problem_list& problems) {
  const auto precision = job.training.precision;
  if (precision == precision_kind::fp32 || reported_at(problems, "/training/precision"))
    return;
  const auto name = std::string(to_string(precision));
  if (job.parallelism.pipelined())
    problems.push_back("/training/precision: " + name +
                       " runs replicas and stacked ensembles for now; pipelines train in fp32");
  if (precision != precision_kind::fp16)
    return;
  bool all_cuda = true;
  for (const auto& d : job.device)
    all_cuda = all_cuda && d.is_cuda();
  if (!all_cuda)
    problems.push_back(
        "/training/precision: fp16 runs on GPUs (\"device\": \"cuda\"); float16 autocast is "
        "CUDA's: on a CPU use bf16 (float32's range, no loss scaling needed)");
  if (job.parallelism.policy == policy_kind::async)
    problems.push_back(
        "/training/precision: fp16 runs sync, local_sgd and schedules: under async the "
        "parameter server would skip overflowed steps its workers' loss scales never hear of; "
        "use bf16");
  if (job.ensemble.members > 0)
    problems.push_back(
        "/training/precision: fp16 trains replicas for now; a stacked ensemble takes bf16");
}

void check_training(const job_config& job, problem_list& problems) {
  const auto& t = job.training;
  check_precision(job, problems);
  if (t.clip_grad_norm && t.clip_grad_value && !reported_at(problems, "/training"))
    problems.push_back(
        "/training: give clip_grad_norm or clip_grad_value, not both (clip_grad_value would "
        "clamp what clip_grad_norm scaled)");
  if (t.clip_grad_norm && job.parallelism.stages > 1 &&
      !reported_at(problems, "/parallelism/stages"))
    problems.push_back(
        "/training/clip_grad_norm: a pipeline's stages each hold a slice of the gradient and "
        "troupe does not yet sum their norms into the global one: use clip_grad_value, or "
        "stages 1");
  // mse and l1 have no accuracy; their metric (mse, mae) is what validation_loss watches.
  const bool regression = t.loss == loss_kind::mse || t.loss == loss_kind::l1;
  const auto accuracy = monitor_metric::validation_accuracy;
  if (regression && !reported_at(problems, "/training/loss"))
    for (const auto& [key, watched] :
         {std::pair{"early_stopping/metric",
                    t.early_stopping && t.early_stopping->metric == accuracy},
          std::pair{"keep_best", t.keep_best == accuracy}})
      if (watched)
        problems.push_back(std::string("/training/") + key + ": loss " + to_string(t.loss) +
                           " has no accuracy; watch \"validation_loss\" (its " +
                           (t.loss == loss_kind::mse ? "mse" : "mae") + ")");
  if (job.data.validation > 0 || reported_at(problems, "/data/validation"))
    return;
  for (const auto& [key, set] : {std::pair{"early_stopping", t.early_stopping.has_value()},
                                 std::pair{"keep_best", t.keep_best.has_value()}})
    if (set)
      problems.push_back(std::string("/training/") + key +
                         ": watches the validation figures, and this job holds out none: set "
                         "data.validation (a fraction of the training set, or a number of rows)");
}

// Workers are numbered replica-major: worker r * stages + s is stage s of pipeline r.
void check_faults(const job_config& job, problem_list& problems) {
  const auto& par = job.parallelism;
  const int64_t workers = par.replicas * par.stages;
  if (reported_at(problems, "/parallelism/replicas") ||
      reported_at(problems, "/parallelism/stages"))
    return;
  for (const auto& [key, worker] : {std::pair{"throw_worker", job.faults.throw_worker},
                                    std::pair{"slow_worker", job.faults.slow_worker}})
    if (worker && *worker >= workers)
      problems.push_back(std::string("/faults/") + key + ": must name a worker below " +
                         (par.stages > 1 ? "replicas x stages (" : "parallelism.replicas (") +
                         std::to_string(workers) + "), got " + std::to_string(*worker));
}

// Optimizer states other than SGD's momentum cannot be averaged into one.
void check_optimizer_states(const job_config& job, problem_list& problems) {
  const auto& phases = job.parallelism.phases;
  const auto optimizer = std::string(to_string(job.optimizer.kind));
  for (std::size_t i = 0; i < phases.size(); ++i) {
    const auto where = "/parallelism/phases/" + std::to_string(i);
    if (job.optimizer.kind == optimizer_kind::sgd || reported_at(problems, where))
      continue;
    if (phases[i].average_momenta)
      problems.push_back(where + "/average_momenta: supported with optimizer sgd only, got " +
                         "true with " + optimizer);
    // Replicas leave local SGD with drifted optimizer states; sync needs them identical.
    if (i > 0 && phases[i - 1].policy == policy_kind::local_sgd &&
        phases[i].policy == policy_kind::sync)
      problems.push_back(where + "/policy: switching from local_sgd to sync needs optimizer " +
                         "sgd (the replicas' " + optimizer +
                         " states cannot be averaged), got sync after local_sgd");
  }
}

// An ensemble is one stacked model on one worker; per-member lrs are a gradient scale, which
// only plain SGD (momentum included, no weight decay) turns into a learning rate.
void check_ensemble(const job_config& job, problem_list& problems) {
  const auto& par = job.parallelism;
  if (job.ensemble.enabled() && !reported_at(problems, "/parallelism")) {
    if (par.replicas != 1 || par.pipelined() || par.policy != policy_kind::sync)
      problems.push_back(
          "/ensemble: runs as one stacked model on one worker: needs policy "
          "sync, replicas 1, stages 1 and micro_batches 1");
    if (job.faults.throw_worker || job.faults.slow_worker)
      problems.push_back("/faults: not supported with an ensemble");
    if (job.training.loss != loss_kind::cross_entropy && !reported_at(problems, "/training/loss"))
      problems.push_back(std::string("/training/loss: a stacked ensemble averages its members' "
                                     "class probabilities and needs cross_entropy, got ") +
                         to_string(job.training.loss));
    if (job.training.keep_best)
      problems.push_back(
          "/training/keep_best: an ensemble's members peak at different steps, so no one best "
          "model exists: train them as a suite of jobs (sweep over seed) to keep each one's "
          "best");
    // Member k is the job of seed + k: past the largest seed a job may have, no job is it.
    constexpr auto largest_seed = static_cast<uint64_t>(INT64_MAX);
    if (job.seed > largest_seed - static_cast<uint64_t>(job.ensemble.members - 1))
      problems.push_back("/ensemble/members: member k trains as the job of seed + k, and seed " +
                         std::to_string(job.seed) + " + " +
                         std::to_string(job.ensemble.members - 1) +
                         " passes the largest seed, 9223372036854775807: lower the seed");
  }
  if (!job.ensemble.lrs.empty() && !reported_at(problems, "/optimizer") &&
      (job.optimizer.kind != optimizer_kind::sgd || job.optimizer.weight_decay != 0))
    problems.push_back(
        "/ensemble/lrs: per-member learning rates need optimizer sgd without "
        "weight_decay, got " +
        std::string(to_string(job.optimizer.kind)) +
        (job.optimizer.weight_decay != 0 ? " with weight_decay" : ""));
}

// Across processes, replicas are the unit of placement: pipelines and stacked ensembles run in
// one process for now.
void check_cluster(const job_config& job, problem_list& problems) {
  const auto& par = job.parallelism;
  if (!job.cluster.enabled() || reported_at(problems, "/cluster"))
    return;
  if (par.pipelined() || job.ensemble.enabled())
    problems.push_back(
        "/cluster: pipelines and ensembles run in one process; across nodes troupe places "
        "data-parallel replicas (stages 1, micro_batches 1, no ensemble)");
  else if (!reported_at(problems, "/parallelism/replicas") && par.replicas < job.cluster.nodes)
    problems.push_back("/cluster/nodes: every node hosts at least one replica, but " +
                       std::to_string(job.cluster.nodes) + " nodes were asked for " +
                       std::to_string(par.replicas) + " replica(s)");
  // A schedule's phases would need a regroup that knows at which boundary a sync phase takes
  // over from local SGD; sync, local_sgd and async each carry on alone.
  if (job.cluster.carries_on() && par.policy == policy_kind::schedule)
    problems.push_back(
        "/cluster/on_node_loss: \"continue\" supports the sync, local_sgd and async policies; "
        "a schedule of phases fails on a lost node (use \"fail\" and --resume)");
}

// A captured step replays the same kernels on the same tensors: a replica's or a stacked
// ensemble's step on a GPU, in any precision (fp16's loss scale is a device tensor the replay
// reads; its skipped steps are decided after it). A pipeline's messages between stages are not
// captured yet.
void check_cuda_graph(const job_config& job, problem_list& problems) {
  if (!job.training.cuda_graph || reported_at(problems, "/training/cuda_graph"))
    return;
  const std::string where = "/training/cuda_graph: ";
  if (!job.on_cuda())
    return problems.push_back(where +
                              "captures GPU steps as CUDA graphs, and the job runs on the CPU "
                              "(\"device\": \"cuda\" puts it on one)");
  if (job.parallelism.pipelined())
    problems.push_back(where +
                       "captures data-parallel replicas' and stacked ensembles' steps; pipelines "
                       "run without it");
}

// CUDA workers: all of a job's workers on one kind of device, and as many devices as workers.
// Checked before any machine is asked what it has (make_device_plan).
void check_devices(const job_config& job, problem_list& problems) {
  if (job.gpu_memory_mb && !job.on_cuda() && !reported_at(problems, "/gpu_memory_mb"))
    problems.push_back(
        "/gpu_memory_mb: caps what the job's process holds on its GPUs, and the job runs on the "
        "CPU (\"device\": \"cuda\" puts it on one)");
  if (reported_at(problems, "/device"))
    return;
  const auto& par = job.parallelism;
  const auto workers = static_cast<std::size_t>(par.replicas * par.stages);
  if (job.device.size() > 1 && job.device.size() != workers &&
      !reported_at(problems, "/parallelism"))
    problems.push_back("/device: one device for all workers or one per worker, but the job has " +
                       std::to_string(workers) + " worker(s) and " +
                       std::to_string(job.device.size()) + " devices were given");
  if (!job.on_cuda())
    return;
  for (const auto& d : job.device)
    if (!d.is_cuda())
      return problems.push_back(
          "/device: the workers of a job run on one kind of device, got both cpu and cuda");
}

// Streaming fragments average one fragment at a time, each at its own offset in the period: the
// offsets must differ, and what is averaged is the weights (no momenta).
void check_fragments(const job_config& job, problem_list& problems) {
  const auto& par = job.parallelism;
  if (par.fragment_overlap > 0 && par.fragments <= 1)
    problems.push_back(
        "/parallelism/fragment_overlap: overlaps a streaming fragment's average with the next "
        "steps; set parallelism.fragments (2 or more) too");
  if (par.fragment_mix && par.fragment_overlap == 0)
    problems.push_back(
        "/parallelism/fragment_mix: mixes an average that arrives fragment_overlap steps late "
        "into the replica's own values; without fragment_overlap the average replaces them");
  if (par.fragments <= 1 || reported_at(problems, "/parallelism/fragments"))
    return;
  if (par.fragments <= par.period && par.fragment_overlap > par.period / par.fragments)
    problems.push_back("/parallelism/fragment_overlap: " + std::to_string(par.fragment_overlap) +
                       " steps overlap the next fragment's turn (one every " +
                       std::to_string(par.period / par.fragments) + " steps with period " +
                       std::to_string(par.period) + " and " + std::to_string(par.fragments) +
                       " fragments): at most period / fragments, one fragment in flight at a time");
  const std::string where = "/parallelism/fragments: ";
  if (par.period < par.fragments)
    problems.push_back(where + std::to_string(par.fragments) +
                       " fragments need a period of at least as many steps (one fragment's "
                       "average every period / fragments steps), got period " +
                       std::to_string(par.period));
  if (par.average_momenta)
    problems.push_back(where +
                       "fragments average the weights only for now; leave out "
                       "average_momenta");
}

}  // namespace

void check_feature_combinations(const job_config& job, problem_list& problems) {
  check_batch(job, problems);
  check_pipeline(job, problems);
  check_training(job, problems);
  check_faults(job, problems);
  check_optimizer_states(job, problems);
  check_ensemble(job, problems);
  check_cluster(job, problems);
  check_devices(job, problems);
  check_cuda_graph(job, problems);
  check_fragments(job, problems);
  if (job.parallelism.average_momenta && job.optimizer.kind != optimizer_kind::sgd)
    problems.push_back(
        "/parallelism/average_momenta: supported with optimizer sgd only (its momentum "
        "buffers), got true with " +
        std::string(to_string(job.optimizer.kind)));
}

void check_against_data(const job_config& job, int64_t train_rows, int64_t validation_rows,
                        int64_t total_steps) {
  if (validation_rows > 0 && train_rows < job.training.batch_size)
    throw job_error({"/data/validation: holds out " + std::to_string(validation_rows) + " of the " +
                     std::to_string(train_rows + validation_rows) + " training rows, leaving " +
                     std::to_string(std::max<int64_t>(train_rows, 0)) +
                     ", fewer than one global batch of " +
                     std::to_string(job.training.batch_size)});
  if (train_rows < job.training.batch_size)
    throw job_error({"/training/batch_size: must be at most the " + std::to_string(train_rows) +
                     " training samples, got " + std::to_string(job.training.batch_size)});
  // A phase that would start after the last step is almost surely a mistake in the job.
  int64_t phase_start = 0;
  for (std::size_t i = 0; i < job.parallelism.phases.size(); ++i) {
    if (phase_start >= total_steps)
      throw job_error({"/parallelism/phases/" + std::to_string(i) + ": would start at step " +
                       std::to_string(phase_start) + " but the run has only " +
                       std::to_string(total_steps) + " steps"});
    phase_start += job.parallelism.phases[i].steps;
  }
}

}  // namespace troupe
