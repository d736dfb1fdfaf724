#include "core/run/run_plan.hpp"

#include "core/collective/compact_encoding.hpp"
#include "core/config/feature_rules.hpp"
#include "core/data/batch_plan.hpp"
#include "core/data/targets.hpp"
#include "core/errors.hpp"
#include "core/model/flat_parameters.hpp"
#include "core/model/network.hpp"
#include "core/model/random_draws.hpp"
#include "core/optim/lr_schedule.hpp"
#include "core/pipeline/pipeline_schedule.hpp"
#include "core/run/memory_fit.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <algorithm>

#include <fmt/format.h>

#include <mutex>
#include <optional>
#include <thread>

namespace troupe {
namespace {

// Floats per sample that leave each stage but the last: one row through the model, layer by
// layer (cheap: no data, no gradients).
std::vector<int64_t> boundary_floats(network& model, const std::vector<stage_slice>& stages,
                                     const std::vector<int64_t>& row_shape) {
  torch::NoGradGuard no_grad;
  std::vector<int64_t> row{1};
  row.insert(row.end(), row_shape.begin(), row_shape.end());
  auto x = at::zeros(row);
  std::vector<int64_t> after_layer;
  for (int64_t i = 0; i < model.child_count(); ++i) {
    x = model.forward_child(i, x);
    after_layer.push_back(x.numel());
  }
  std::vector<int64_t> floats;
  for (std::size_t s = 0; s + 1 < stages.size(); ++s)
    floats.push_back(after_layer[static_cast<std::size_t>(stages[s].end - 1)]);
  return floats;
}

void add_pipeline(network& model, run_plan& p) {
  const auto& par = p.job.parallelism;
  p.stages = split_stages(p.model.layers, par.stages, par.split);
  p.boundary_floats_per_row = boundary_floats(model, p.stages, p.data.row_shape);
  for (int64_t m = 0; m < par.micro_batches; ++m)
    p.micro_batch_rows.push_back(shard_of(p.rows_per_replica.front(), par.micro_batches, m).size());
  p.predicted_bubble = predicted_bubble_fraction(par.stages, par.micro_batches);
}

run_mode mode_of(const job_config& job) {
  if (job.ensemble.enabled())
    return run_mode::ensemble;
  return job.parallelism.pipelined() ? run_mode::pipeline : run_mode::replicas;
}

// The actors that compute in this process: every replica's stages, or an ensemble's one
// (its members train one at a time).
int64_t workers_in_process(const job_config& job) {
  return mode_of(job) == run_mode::ensemble ? 1 : job.parallelism.replicas * job.parallelism.stages;
}

// The one place that decides where a sync step's gradients meet; workers and driver both read
// the answer from the plan.
gradient_meeting meeting_of(const run_plan& p) {
  if (p.mode == run_mode::ensemble)
    return gradient_meeting::local;
  if (p.mode == run_mode::pipeline)
    return gradient_meeting::driver;  // each stage's sum over the pipelines
  if (p.job.parallelism.replicas == 1)
    return gradient_meeting::local;
  if (p.devices.gpu_each)
    return gradient_meeting::nccl;
  if (p.job.cluster.enabled())
    return gradient_meeting::ring;
  // GPU replicas sharing a device sum there, through the driver; CPU replicas among themselves.
  const bool gpu = std::any_of(p.devices.workers.begin(), p.devices.workers.end(),
                               [](const device_spec& d) { return d.is_cuda(); });
  return gpu ? gradient_meeting::driver : gradient_meeting::shared;
}

// sync: each worker hands its gradient over and gets the combined one back, float32 over every
// parameter, every step. async: it pushes its gradient and pulls the weights, every step.
// local_sgd: its weights (and momenta when those are averaged too) every `period` steps. A
// schedule: the mean over its phases. In-process these travel by handle; the figures are what
// a step would move between processes.
int64_t bytes_per_step(const run_plan& p) {
  // compression packs what async and local_sgd send (bf16 2 bytes a value, int8 1 and a scale
  // per block): the plan counted 4 bytes a value whatever travelled.
  const double tensor_bytes =
      static_cast<double>(packed_bytes(p.model.flat_size(), p.job.parallelism.compression));
  double total_bytes = 0;
  for (const auto& ph : p.schedule.phases()) {
    const double steps = static_cast<double>(ph.end_step - ph.first_step);
    if (ph.config.policy == policy_kind::local_sgd)
      total_bytes += steps / static_cast<double>(ph.config.period) * tensor_bytes *
                     (ph.config.average_momenta ? 2 : 1);
    else
      total_bytes += steps * tensor_bytes;
  }
  return static_cast<int64_t>(total_bytes / static_cast<double>(p.rules.total_steps()) + 0.5);
}

void plan_steps(run_plan& p) {
  const auto& job = p.job;
  const int64_t steps_per_epoch =
      batch_plan::steps_in_epoch(p.data.train_rows, job.training.batch_size);
  const int64_t total_steps =
      job.training.steps > 0 ? job.training.steps : job.training.epochs * steps_per_epoch;
  check_against_data(job, p.data.train_rows, p.data.validation_rows, total_steps);
  p.rules = step_rules(total_steps, steps_per_epoch, job.training.eval_interval);
  p.schedule = policy_schedule(job.parallelism, p.rules);
  for (int64_t r = 0; r < job.parallelism.replicas; ++r)
    p.rows_per_replica.push_back(
        shard_of(job.training.batch_size, job.parallelism.replicas, r).size());
}

std::string render_shape(at::IntArrayRef sizes) {
  return fmt::format("[{}]", fmt::join(sizes, ", "));
}

void describe_builtin(run_plan& p, const device_inventory& inventory) {
  if (const auto problem = input_problem(p.job.model); !problem.empty())
    throw job_error({"/model/type: " + problem +
                     " (use the mlp, or your own model: \"type\": \"torchscript\")"});
  check_model_fits(p.job, parameters_of(p.job.model, p.data.classes), inventory);
  auto layers = build_model(p.job.model, p.data.classes);
  p.model.layers = summarize_layers(layers);
  p.model.parameters = count_parameters(layers);
  p.model.parameter_layout = flat_parameters(*layers).layout();
  p.model.activation_values_per_row = activation_values_per_row(layers, p.data.row_shape);
  check_step_fits(p.job, static_cast<double>(p.model.parameters), p.model.activation_values_per_row,
                  inventory);
  if (p.mode == run_mode::pipeline) {
    network model(layers);
    add_pipeline(model, p);
  }
}

// A TorchScript error ends with what went wrong, after the interpreter's traceback.
std::string last_line(const std::string& text) {
  auto end = text.find_last_not_of("\n ");
  if (end == std::string::npos)
    return text;
  const auto begin = text.rfind('\n', end);
  return text.substr(begin == std::string::npos ? 0 : begin + 1, end + 1 - (begin + 1));
}

// Two input rows through the model before anything runs, so that a model that does not fit the
// data is refused with both shapes instead of failing in every worker at the first step. Two,
// not one: a forward that returns one row for any batch (an output of x[0]) fits one row.
void dry_forward(network& model, const run_plan& p) {
  const auto where = "/model/path: " + p.job.model.path + ": ";
  constexpr int64_t rows = 2;
  std::vector<int64_t> input{rows};
  input.insert(input.end(), p.data.row_shape.begin(), p.data.row_shape.end());
  model.set_training(false);
  at::Tensor out;
  try {
    out = model.forward(at::zeros(input));
  } catch (const c10::Error& e) {
    throw job_error({where + "its forward fails on two input rows of shape " + render_shape(input) +
                     " (" + last_line(e.what_without_backtrace()) + ")"});
  } catch (const std::exception& e) {
    throw job_error({where + "its forward fails on two input rows of shape " + render_shape(input) +
                     " (" + last_line(e.what()) + ")"});
  }
  // Class scores are [rows, classes]; other targets take any output of as many values per row
  // (core/train/loss reshapes it to the targets').
  std::vector<int64_t> wanted{rows, p.data.classes};
  if (!p.data.class_labels) {
    wanted = {rows};
    wanted.insert(wanted.end(), p.data.target_shape.begin(), p.data.target_shape.end());
  }
  const bool fits = p.data.class_labels ? out.sizes() == at::IntArrayRef(wanted)
                                        : out.dim() >= 1 && out.size(0) == rows &&
                                              out.numel() == rows * p.data.classes;
  if (!fits || out.scalar_type() != at::kFloat)
    throw job_error({fmt::format(
        "{}for two input rows of shape {} the model returns {} {}; {} against the data's {} "
        "needs float32 {}",
        where, render_shape(input), c10::toString(out.scalar_type()), render_shape(out.sizes()),
        to_string(p.job.training.loss),
        p.data.class_labels ? fmt::format("{} classes", p.data.classes)
                            : describe_targets(false, p.data.target_shape),
        render_shape(wanted))});
  // Every worker's first backward would fail with LibTorch's words, naming neither the file nor
  // the cause.
  if (!out.requires_grad())
    throw job_error({where +
                     "its output does not depend on its parameters (no gradient reaches them: "
                     "does its forward detach the output, or build it from plain numbers?)"});
}

// The loss needs targets of its kind: class labels for cross_entropy, floats for the others.
void check_loss_fits_targets(const run_plan& p) {
  const auto loss = p.job.training.loss;
  const bool wants_labels = loss == loss_kind::cross_entropy;
  if (wants_labels == p.data.class_labels)
    return;
  const auto data = p.job.data.kind == data_kind::tensors
                        ? fmt::format("{} (\"y\")", p.job.data.train_file)
                    : p.job.data.kind == data_kind::npy
                        ? fmt::format("{}", fmt::join(p.job.data.train_arrays.y, ", "))
                        : fmt::format("the {} data", to_string(p.job.data.kind));
  if (wants_labels)
    throw job_error({fmt::format(
        "/training/loss: cross_entropy needs int64 class labels, but {} holds {} (use mse, l1 "
        "or bce_with_logits for float targets)",
        data, describe_targets(false, p.data.target_shape))});
  throw job_error(
      {fmt::format("/training/loss: {} needs float targets, but {} holds int64 class labels (use "
                   "cross_entropy, or save y as float32 targets)",
                   to_string(loss), data)});
}

void describe_script(run_plan& p, const device_inventory& inventory) {
  std::optional<network> loaded;
  try {
    loaded.emplace(p.job.model, p.data.classes);
  } catch (const model_file_error& e) {
    throw job_error({std::string("/model/path: ") + e.what()});
  }
  auto& model = *loaded;
  if (p.job.model.init_from_seed) {  // refuses a layer without PyTorch's rule before the run
    std::lock_guard<std::mutex> generator(generator_lock());
    model.reinitialize_from_seed(p.job.model.path);
  }
  const flat_parameters flat(model.named_parameters(), model.named_buffers());
  check_model_fits(p.job, static_cast<double>(flat.size()), inventory);
  p.model.parameters = flat.parameter_count();
  p.model.buffer_values = flat.size() - flat.parameter_count();
  p.model.layers = model.layers();
  p.model.parameter_layout = flat.layout();
  p.model.random_ops = model.random_ops();
  dry_forward(model, p);
  if (p.mode == run_mode::ensemble) {
    // The members stack the module's layers rebuilt as built-in ones: refused here, naming the
    // layer, when one cannot be.
    model.stackable_layers(p.job.model.path);
    return;
  }
  if (p.mode != run_mode::pipeline)
    return;
  // Stages are consecutive top-level children, each a flat vector of parameters alone.
  // The key the job set: stages, or micro_batches alone (gradient accumulation).
  const auto where = std::string(p.job.parallelism.stages > 1 ? "/parallelism/stages: "
                                                              : "/parallelism/micro_batches: ") +
                     p.job.model.path + ": ";
  if (!model.is_sequential())
    throw job_error({where + "pipelines (and micro_batches) cut an nn.Sequential into consecutive "
                             "children; this module's forward is its own code"});
  add_pipeline(model, p);
}

}  // namespace

const char* to_string(run_mode x) {
  switch (x) {
    case run_mode::replicas:
      return "replicas";
    case run_mode::pipeline:
      return "pipeline";
    case run_mode::ensemble:
      return "ensemble";
  }
  return "?";
}

const char* to_string(gradient_meeting x) {
  switch (x) {
    case gradient_meeting::local:
      return "local";
    case gradient_meeting::driver:
      return "driver";
    case gradient_meeting::ring:
      return "ring";
    case gradient_meeting::nccl:
      return "nccl";
    case gradient_meeting::shared:
      return "shared";
  }
  return "?";
}

double run_plan::lr_at(int64_t step) const {
  return learning_rate(job.optimizer, step, rules.total_steps());
}

int64_t run_plan::worker_steps() const {
  return parameter_server() ? rules.total_steps() * workers : rules.total_steps();
}

int64_t run_plan::checkpoint_parts() const {
  if (mode == run_mode::pipeline)
    return job.parallelism.stages;
  if (mode == run_mode::ensemble || parameter_server() ||
      job.parallelism.policy == policy_kind::sync)
    return 1;
  return workers;
}

std::vector<int64_t> run_plan::stage_parameters() const {
  std::vector<int64_t> counts;
  if (mode == run_mode::pipeline)
    for (const auto& s : stages)
      counts.push_back(s.parameters);
  return counts;
}

namespace {

// The values of each parameter tensor, in model order (the layout's buffers left out).
std::vector<int64_t> parameter_sizes(const model_facts& model) {
  std::vector<int64_t> sizes;
  int64_t values = 0;
  for (const auto& [name, shape] : model.parameter_layout) {
    if (values >= model.parameters)
      break;  // the buffers, behind the parameters
    int64_t n = 1;
    for (auto d : shape)
      n *= d;
    sizes.push_back(n);
    values += n;
  }
  return sizes;
}

}  // namespace

int64_t run_plan::server_shards() const {
  if (!parameter_server())
    return 0;
  // One unless the job asks for more: with workers alike, over 4 emulated hosts at 200 Mbit/s,
  // 2 and 4 shards did fewer samples/s than one server (docs/benchmarks.md).
  return std::max<int64_t>(1, job.parallelism.ps_shards);
}

std::vector<server_shard> server_shards_of(const run_plan& plan) {
  return split_server(parameter_sizes(plan.model), plan.model.buffer_values,
                      std::max<int64_t>(1, plan.server_shards()));
}

std::vector<server_shard> fragments_of(const run_plan& plan) {
  return split_server(parameter_sizes(plan.model), plan.model.buffer_values,
                      plan.schedule.fragments());
}

std::optional<server_shard> fragment_after(const run_plan& plan, int64_t step) {
  const auto f = plan.schedule.fragment_after(step);
  if (f < 0)
    return std::nullopt;
  return fragments_of(plan).at(static_cast<std::size_t>(f));
}

namespace {

// Fragments are runs of whole parameter tensors: at most one per tensor.
void check_fragments(const run_plan& p) {
  const auto fragments = p.schedule.fragments();
  const auto tensors = static_cast<int64_t>(parameter_sizes(p.model).size());
  if (fragments > tensors)
    throw job_error({"/parallelism/fragments: " + std::to_string(fragments) +
                     " fragments over a model of " + std::to_string(tensors) +
                     " parameter tensors: each fragment holds at least one whole tensor"});
}

// A sharded server holds its slices on the host and splits the parameters by whole tensors.
void check_server_shards(const run_plan& p) {
  if (!p.sharded_server())
    return;
  const auto shards = p.server_shards();
  const std::string where = "/parallelism/ps_shards: ";
  for (const auto& d : p.devices.workers)
    if (d.is_cuda())
      throw job_error({where + std::to_string(shards) +
                       " parameter server shards run on the CPU; GPU workers take one server "
                       "(\"ps_shards\": 1)"});
  try {
    server_shards_of(p);
  } catch (const std::invalid_argument& e) {
    throw job_error({where + e.what()});
  }
}

}  // namespace

int64_t run_plan::eval_shards() const {
  if (mode == run_mode::ensemble || parameter_server())
    return 1;
  return job.parallelism.replicas;
}

run_plan make_run_plan(const job_config& job, const data_facts& data,
                       const device_inventory& inventory) {
  run_plan p;
  p.job = job;
  p.job.model.input_shape = data.row_shape;  // what the built-in models' first layer takes
  p.data = data;
  p.mode = mode_of(job);
  p.devices = make_device_plan(job, inventory);
  check_data_fits(job, data, inventory);
  plan_steps(p);
  check_loss_fits_targets(p);
  if (job.model.kind == model_kind::torchscript)
    describe_script(p, inventory);
  else
    describe_builtin(p, inventory);
  p.workers = workers_in_process(job);
  check_server_shards(p);
  check_fragments(p);
  p.gradients = meeting_of(p);
  p.ring.bucket_elements =
      std::max<int64_t>(1, static_cast<int64_t>(job.cluster.bucket_mb * (1 << 20) / 4));
  p.ring.window = job.cluster.ring_window;
  p.bytes_sent_per_step = bytes_per_step(p);
  p.bytes_received_per_step = p.bytes_sent_per_step;
  p.hardware_threads = std::thread::hardware_concurrency();
  p.threads_chosen = job.parallelism.threads_per_replica == 0;
  p.job.parallelism.threads_per_replica = intra_op_threads(job, p.hardware_threads);
  p.threads_total = p.workers * p.job.parallelism.threads_per_replica;
  if (!job.cluster.enabled())  // else the replicas live in the nodes' processes
    check_address_space(p.job, static_cast<double>(p.model.flat_size()), p.data, p.threads_total,
                        inventory, p.model.activation_values_per_row);
  return p;
}

int64_t intra_op_threads(const job_config& job, unsigned hardware_threads) {
  const auto& par = job.parallelism;
  if (par.threads_per_replica > 0)
    return par.threads_per_replica;
  if (job.cluster.enabled())
    return 1;
  return std::max<int64_t>(1, static_cast<int64_t>(hardware_threads) / workers_in_process(job));
}

replica_plan replica_plan_of(const run_plan& plan, int64_t rank) {
  return replica_plan_of(plan.job, rank);
}

ensemble_plan ensemble_plan_of(const run_plan& plan) {
  return ensemble_plan_of(plan.job);
}

stage_plan stage_plan_of(const run_plan& plan, int64_t pipeline, int64_t stage) {
  const auto& par = plan.job.parallelism;
  return stage_plan_of(plan.job, plan.stages.at(static_cast<std::size_t>(stage)),
                       {stage, par.stages, pipeline, par.replicas});
}

std::vector<std::pair<std::string, at::Tensor>> named_weights(const run_plan& plan,
                                                              const at::Tensor& flat) {
  return unflatten(flat, plan.model.parameter_layout);
}

}  // namespace troupe
