// The job file as typed values: the vocabulary every folder of core/ may use (enums and plain
// structs, nothing that reads files or builds anything), which is why it sits in core/job/, below
// everything else. parse_job() (core/config/parse_job.hpp) fills these from JSON, checking every
// key; to_json() writes them back with every default filled in, which is what a run records as
// its resolved job.json. Defaults live here, once; docs/job-file.md documents each key.
#pragma once

#include "core/job/device_spec.hpp"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

enum class model_kind { mlp, cnn, torchscript };
/// How a pipeline orders its stages' forwards and backwards (core/pipeline/pipeline_schedule).
enum class pipeline_schedule_kind { gpipe, one_f_one_b };
enum class activation_kind { relu, tanh, gelu };

struct model_config {
  model_kind kind = model_kind::mlp;
  /// Widths of the hidden fully connected layers (mlp), or of those after the conv stack (cnn).
  std::vector<int64_t> hidden{256, 128};
  activation_kind activation = activation_kind::relu;
  /// cnn only: output channels of each conv block (conv, activation, 2x2 max-pool).
  std::vector<int64_t> channels{16, 32};
  /// cnn only: odd square kernel size; padding keeps the spatial size before each pool.
  int64_t kernel_size = 5;
  /// torchscript only: a module saved from Python with torch.jit.script(m).save(path) (or
  /// torch.jit.trace); it trains from the weights saved in it.
  std::string path;
  /// torchscript only (`init`: "saved" or "seed"): re-initialize the file's parameters from the
  /// job's seed with PyTorch's default rules per layer kind (core/model/script_init), so that a
  /// sweep over seeds varies the start; false keeps the weights saved in the file.
  bool init_from_seed = false;
  /// Built-in models: the shape of one input row, which sizes the first layer (the MLP flattens
  /// any shape; the CNN takes [channels, height, width]). Not a job key: the plan sets it from
  /// the data (28 x 28 images unless the data says otherwise).
  std::vector<int64_t> input_shape{1, 28, 28};
};

enum class data_kind { fashion_mnist, synthetic, tensors, csv, npy, image_folder };

/// image_folder only: what every image becomes before the model sees it (core/data/image_folder).
struct image_config {
  std::vector<int64_t> size;  ///< [height, width]; required
  /// Brought to size by stretching (false), or scaled to cover it and cut to its center.
  bool center_crop = false;
  int64_t channels = 3;      ///< 1 (gray) or 3 (RGB)
  std::vector<double> mean;  ///< per channel, of pixels / 255; empty: 0
  std::vector<double> std;   ///< per channel; empty: 1
  /// Where the decoded images are kept: the process's memory, or (true) a scratch file in
  /// `cache_dir` mapped into it (core/io/scratch_mapping), for folders larger than memory.
  bool cache_on_disk = false;
  std::string cache_dir;  ///< empty: $TMPDIR, else /tmp
};

/// image_folder only: what training draws for each image at each step, from the seed.
struct augment_config {
  int64_t random_crop_padding = 0;  ///< a crop of the image padded by this many zero pixels
  bool horizontal_flip = false;     ///< a mirror image half the time
};

/// npy only: one split's arrays as numpy.save writes them, inputs and targets, each one file or
/// its shards in order (core/data/npy_arrays).
struct npy_files {
  std::vector<std::string> x;
  std::vector<std::string> y;
};

struct data_config {
  /// Rows held out of the training set as a validation set, by a seeded split: 0 none, a
  /// fraction in (0, 1), or a whole number of rows (>= 1).
  double validation = 0;
  /// Batches each replica's loader gathers ahead of its steps, on a thread of its own
  /// (core/data/batch_loader); 0 gathers them on the worker's thread, when the step needs them.
  int64_t prefetch = 2;
  data_kind kind = data_kind::fashion_mnist;
  /// fashion_mnist only: folder with the four gzipped IDX files (Debian's dataset-fashion-mnist).
  std::string path = "/usr/share/datasets/fashion-mnist";
  /// synthetic only: sizes of the generated train and test sets, and the noise around each
  /// class prototype (standard deviation; larger is harder).
  int64_t train_samples = 4096;
  int64_t test_samples = 1024;
  double noise = 1.0;
  /// tensors: files of Python's torch.save({"x": X, "y": Y}, path) (core/data/tensor_files);
  /// csv: tables with a header row (core/data/csv_table).
  std::string train_file;
  std::string test_file;
  /// csv only: the column that holds the target; every other column is an input feature.
  std::string label = "label";
  /// csv only, set from training.loss (not a key of its own): the target column holds class
  /// numbers (int64 labels, for cross_entropy) rather than float targets.
  bool class_labels = true;
  /// image_folder only: train_file and test_file are the splits' folders.
  image_config image;
  augment_config augment;
  /// image_folder only: an image that cannot be decoded is left out (counted) instead of
  /// failing the run.
  bool skip_bad_images = false;
  /// npy only: each split's .npy files.
  npy_files train_arrays;
  npy_files test_arrays;
};

enum class optimizer_kind { sgd, adam, adamw, rmsprop };

/// How the learning rate moves with the step (core/optim/lr_schedule): the same rates as
/// PyTorch's lr_scheduler for the same settings.
enum class lr_schedule_kind { constant, step, cosine, one_cycle };

struct lr_schedule_config {
  lr_schedule_kind kind = lr_schedule_kind::constant;
  int64_t every = 1;   ///< step: multiply by gamma every this many steps (StepLR step_size)
  double gamma = 0.1;  ///< step
  double min_lr = 0;   ///< cosine: the rate it anneals to (CosineAnnealingLR eta_min)
  /// Not one_cycle: the rate rises linearly from lr x warmup_start_factor to lr over this many
  /// steps first (LinearLR), then the schedule runs over the remaining steps (SequentialLR).
  int64_t warmup_steps = 0;
  double warmup_start_factor = 0.1;
  /// one_cycle (OneCycleLR with max_lr = optimizer.lr, cosine annealing): the share of the
  /// steps spent rising, and the start and end rates as lr / div_factor and that / final.
  double pct_start = 0.3;
  double div_factor = 25;
  double final_div_factor = 1e4;
};

struct optimizer_config {
  lr_schedule_config schedule;
  optimizer_kind kind = optimizer_kind::sgd;
  double lr = 0.01;  ///< adam's and adamw's default is 0.001, set by the parser
  /// sgd and adam: added to the gradient (L2); adamw: decoupled, the weights shrink by
  /// lr x weight_decay each step (default 0.01 there, as torch.optim.AdamW's).
  double weight_decay = 0.0;
  double momentum = 0.0;  ///< sgd and rmsprop
  bool nesterov = false;  ///< sgd only; needs momentum > 0
  double beta1 = 0.9;     ///< adam and adamw
  double beta2 = 0.999;   ///< adam and adamw
  double eps = 1e-8;      ///< adam, adamw and rmsprop
  double alpha = 0.99;    ///< rmsprop: the squares' average's smoothing constant
  bool centered = false;  ///< rmsprop: divide by the gradient's estimated variance

  /// Moment buffers the optimizer keeps per parameter value (for memory and disk estimates).
  int64_t state_buffers() const {
    switch (kind) {
      case optimizer_kind::sgd:
        return momentum > 0 ? 1 : 0;
      case optimizer_kind::rmsprop:
        return 1 + (momentum > 0 ? 1 : 0) + (centered ? 1 : 0);
      default:
        return 2;
    }
  }
};

/// The validation figure that early stopping and keep_best watch.
enum class monitor_metric { validation_loss, validation_accuracy };

struct early_stopping_config {
  monitor_metric metric = monitor_metric::validation_loss;
  int64_t patience = 5;  ///< evaluations without improvement before training stops
  double min_delta = 0;  ///< an improvement smaller than this does not count
};

/// What training minimizes (core/train/loss): cross_entropy over integer class labels (metric:
/// accuracy), mse or l1 against float targets (metrics: mse, mae), or bce_with_logits against
/// multi-label 0/1 targets (metric: accuracy at 0.5).
enum class loss_kind { cross_entropy, mse, l1, bce_with_logits };
/// The arithmetic of the forward (core/train/autocast_scope): float32 throughout, or bf16 / fp16
/// autocast with the weights, gradients and optimizer in float32.
enum class precision_kind { fp32, bf16, fp16 };

/// training.precision "fp16": dynamic loss scaling (core/train/loss_scaler), as
/// torch.amp.GradScaler's init_scale and growth_interval.
struct loss_scale_config {
  double initial = 65536.0;        ///< 2^16; powers of two scale and unscale exactly
  int64_t growth_interval = 2000;  ///< finite steps in a row before the scale doubles
};

struct training_config {
  loss_kind loss = loss_kind::cross_entropy;
  precision_kind precision = precision_kind::fp32;
  loss_scale_config loss_scale;  ///< fp16 only
  /// Exactly one of epochs and steps is set (> 0); the other is 0. An epoch is every full global
  /// batch of the shuffled train set (an incomplete last batch is dropped).
  int64_t epochs = 1;
  int64_t steps = 0;
  int64_t batch_size = 128;  ///< global: split across replicas in rank order
  /// Evaluate every this many steps; 0 means at the end of every epoch. The run always evaluates
  /// after its last step. With a validation split the evaluations use it, and the test set is
  /// evaluated once, at the end, on the model that is kept.
  int64_t eval_interval = 0;
  /// Scale the combined gradient so its global L2 norm is at most this (clip_grad_norm_), or
  /// clamp each element to [-v, v] (clip_grad_value_). At most one of them.
  std::optional<double> clip_grad_norm;
  std::optional<double> clip_grad_value;
  /// Stop when the validation figure has not improved for `patience` evaluations.
  std::optional<early_stopping_config> early_stopping;
  /// Keep the weights at the best validation figure (by this metric) as best_weights.pt.
  std::optional<monitor_metric> keep_best;
  /// GPU replicas: record a step's gradient (forward, loss, backward) as a CUDA graph once and
  /// replay it every step after (core/train/replica_engine), one launch instead of dozens.
  bool cuda_graph = false;
};

enum class policy_kind { sync, local_sgd, async, schedule };

/// How async pushes and hand-outs, and local_sgd averages, cross the wire
/// (core/collective/compact_encoding).
enum class compression_kind { none, bf16, int8 };

/// One phase of a `schedule`: a policy (sync or local_sgd) for a number of steps.
struct phase_config {
  policy_kind policy = policy_kind::sync;
  int64_t steps = 0;  ///< 0 for the last phase: it runs to the end
  int64_t period = 8;
  bool average_momenta = false;
};

/// local_sgd: DiLoCo's outer optimizer (core/optim/outer_optimizer): the averaged change since
/// the last average is a pseudo-gradient stepped by SGD with momentum. Not enabled: the
/// replicas take the plain average.
struct outer_optimizer_config {
  bool enabled = false;
  double lr = 0.7;
  double momentum = 0.9;
  bool nesterov = true;
};

struct parallelism_config {
  policy_kind policy = policy_kind::sync;
  int64_t replicas = 1;
  /// LibTorch intra-op threads of each replica; 0 (the job does not say): the plan's choice,
  /// run_plan's `intra_op_threads`.
  int64_t threads_per_replica = 0;
  /// local_sgd only: replicas step alone and average their weights every `period` steps (and
  /// at every evaluation and the last step). period 1 is the same training as sync.
  int64_t period = 8;
  /// local_sgd + sgd only: average the momentum buffers too, not only the weights.
  bool average_momenta = false;
  /// local_sgd only: DiLoCo's outer step in place of the plain average.
  outer_optimizer_config outer_optimizer;
  /// local_sgd only: streaming fragments. The flat weights are cut into this many fragments of
  /// whole parameter tensors (core/policy/server_shards' split); fragment f is averaged every
  /// `period` steps, offset by f * period / fragments, so that one fragment's average goes out
  /// every period / fragments steps instead of the whole model every period. Evaluations and
  /// the last step average every fragment. 1: the whole model at once.
  int64_t fragments = 1;
  /// local_sgd with fragments only: the inner steps a replica runs on while a fragment's average
  /// is on its way (Streaming DiLoCo's overlap): it hands in a copy of the fragment, goes on,
  /// and merges the average before step + fragment_overlap (or the next averaging step, if
  /// sooner). 0: it waits for the average, which replaces the fragment. At most
  /// period / fragments, so that one fragment is in flight at a time.
  int64_t fragment_overlap = 0;
  /// With fragment_overlap: the average's share of the merged fragment; the replica keeps
  /// 1 - fragment_mix of its own values, which went on training meanwhile. Unset: 0.5.
  std::optional<double> fragment_mix;
  /// async only: how many steps a worker may run ahead of the slowest live worker (stale-
  /// synchronous parallel); unset means unbounded. 0 keeps all workers on the same clock.
  std::optional<int64_t> max_staleness;
  /// async only: apply a gradient of staleness k with lr / (1 + k).
  bool staleness_lr_scaling = false;
  /// async only: the parameter server's shards (core/policy/server_shards), each an actor with
  /// its slice of the weights and of the optimizer; across nodes one on each node in turn, the
  /// workers pushing and pulling every shard's slice directly. 0 (the job does not say): one per
  /// node across nodes, one in a single process (run_plan::server_shards).
  int64_t ps_shards = 0;
  /// async and local_sgd: what crosses the wire in a compact encoding (core/collective/
  /// compact_encoding): async's pushed gradients (with error feedback) and handed-out weights,
  /// local_sgd's weights to average and the average. none sends float32 as is.
  compression_kind compression = compression_kind::none;
  /// schedule only: the phases, in order; the run switches policy at each boundary
  /// without restarting any actor.
  std::vector<phase_config> phases;
  /// Pipeline parallelism (sync only): each replica is a pipeline of `stages` stage actors, each
  /// owning a consecutive slice of the layers; a replica's rows of the global batch are cut into
  /// `micro_batches` as even as possible (the first rows % M get one row more).
  int64_t stages = 1;
  int64_t micro_batches = 1;
  pipeline_schedule_kind schedule = pipeline_schedule_kind::one_f_one_b;
  /// The first layer of stages 1..P-1; empty means balanced by parameter count.
  std::vector<std::string> split;

  bool pipelined() const { return stages > 1 || micro_batches > 1; }
};

/// A stacked ensemble (core/ensemble): `members` models of the job's architecture trained as one
/// stacked model on one worker. 0 members: no ensemble.
struct ensemble_config {
  int64_t members = 0;
  /// One learning rate per member (sgd without weight decay only); empty: all use optimizer.lr.
  std::vector<double> lrs;
  /// Member k draws its batches in the order of seed + k instead of the job's order.
  bool distinct_data_order = false;

  bool enabled() const { return members > 0; }
};

/// What a run across processes does when it loses a node (killed, cut off by heartbeats, or
/// named by the step watchdog as the one holding a step up).
enum class node_loss_policy {
  fail,      ///< the run ends (with a checkpoint when it has a folder), naming the node
  carry_on,  ///< "continue": the survivors redo the step in flight and go on; replacements join
};

/// How the nodes' replicas sum sync gradients among themselves over the network.
enum class node_collective {
  ring,  ///< troupe's socket ring: 2(N - 1) steps a sum, encrypted under --tls
  gloo,  ///< gloo's halving-doubling over a full mesh: 2 log2(N) steps, plain TCP only
};

/// Training across processes (`troupe coordinator` and `troupe node`). 0 nodes: one process.
struct cluster_config {
  /// Nodes that must join before the run starts; replicas are placed on them in rank order.
  int64_t nodes = 0;
  /// How long the coordinator waits for them.
  double join_timeout_s = 60;
  /// A node silent for this long is declared dead (heartbeats go out every timeout / 5).
  double node_timeout_s = 5;
  /// Gradients cross processes in ring all-reduce buckets of at most this many MiB.
  double bucket_mb = 1;
  /// How many of those buckets a ring between processes has in flight at once. One was fastest
  /// on loopback (bench/allreduce.py: most likely each chunk stays in cache from the socket to
  /// the sum and on); links with a long round trip may want more.
  int64_t ring_window = 1;
  /// When every node process is on one host (they can open one shared-memory segment), sync
  /// gradients are summed through shared memory (core/collective/host_reduction) instead of the
  /// ring over the network. false keeps every exchange on the network.
  bool shared_memory = true;
  /// Over the network (between hosts, or every node when they share no memory): the socket
  /// ring, or gloo's halving-doubling, which takes fewer steps where there are many ranks
  /// (core/collective/gloo_mesh.hpp).
  node_collective collective = node_collective::ring;
  /// No step completed for this long ends the run, naming the silent workers
  /// (core/policy/step_watch.hpp); 0: derived from the run's own step times.
  double step_timeout_s = 0;
  /// What losing a node does (actors/driver/driver_membership.cpp).
  node_loss_policy on_node_loss = node_loss_policy::fail;
  /// carry_on: with fewer live nodes the run waits for replacements...
  int64_t min_nodes = 1;
  /// ...for at most this long, then ends with a checkpoint, naming the nodes missing.
  double replacement_timeout_s = 60;

  bool enabled() const { return nodes > 0; }
  bool carries_on() const { return on_node_loss == node_loss_policy::carry_on; }
  /// A bound on a sum among processes that moves no byte: past it the node holding it up would
  /// have been declared lost.
  double sum_idle_timeout_s() const { return std::max(30.0, 3 * node_timeout_s); }
};

/// Checkpoints of the run's whole state into the run directory's checkpoints/ (core/checkpoint),
/// from which `troupe run --resume` continues exactly. A stopped run (Ctrl-C) writes one where it
/// stops whatever these say.
struct checkpoint_config {
  int64_t every_steps = 0;  ///< after every this many steps; 0: not by count
  double every_s = 0;       ///< at the first step this long after the last one; 0: not by time
  int64_t keep = 3;         ///< the newest this many are kept

  bool enabled() const { return every_steps > 0 || every_s > 0; }
};

/// Fault injection, for tests and demos of failure handling. Off unless set.
struct faults_config {
  /// Make this worker raise a LibTorch error (a shape mismatch) in the given step.
  std::optional<int64_t> throw_worker;
  int64_t throw_step = 0;
  /// Make this worker sleep `slow_ms` milliseconds in every step (a straggler, for demos).
  std::optional<int64_t> slow_worker;
  int64_t slow_ms = 0;
  /// Make every node refuse to form the socket ring (as a firewall on its ports would): the
  /// coordinator falls back to the ring over actors.
  bool refuse_socket_ring = false;
  /// Make every node refuse to form the socket ring again at a regroup (cluster.on_node_loss
  /// "continue"), as a firewall on the new ports would: that epoch's ring runs over actors.
  bool refuse_ring_reform = false;
  /// Make the coordinator's actor system keep an actor that never ends (as once seen at the end
  /// of a sharded run under load), so that its exit waits 1 s instead of 30 before it goes on
  /// (actors/cluster/bounded_stop).
  bool stuck_exit = false;
};

struct job_config {
  std::string name = "job";
  uint64_t seed = 0;
  model_config model;
  data_config data;
  optimizer_config optimizer;
  training_config training;
  parallelism_config parallelism;
  ensemble_config ensemble;
  cluster_config cluster;
  checkpoint_config checkpoint;
  faults_config faults;
  /// Where the workers compute: one device for all of them, or one per worker (replica-major:
  /// worker r * stages + s). make_device_plan (core/device) resolves "cuda" to a GPU.
  std::vector<device_spec> device{device_spec{}};
  /// LibTorch's deterministic kernels for the run, TF32 off (core/run/deterministic_kernels): a
  /// rerun on the same GPU gives the same bits.
  bool deterministic = false;
  /// GPUs only: the most this process's caching allocator may hold on each GPU it uses, in MB
  /// (gpu/memory_cap): jobs sharing a GPU cannot take each other's memory. None: no cap.
  std::optional<double> gpu_memory_mb;

  bool on_cuda() const {
    for (const auto& d : device)
      if (d.is_cuda())
        return true;
    return false;
  }
};

const char* to_string(model_kind x);
const char* to_string(pipeline_schedule_kind kind);
const char* to_string(activation_kind x);
const char* to_string(data_kind x);
const char* to_string(optimizer_kind x);
const char* to_string(policy_kind x);
const char* to_string(compression_kind x);
const char* to_string(lr_schedule_kind x);
const char* to_string(monitor_metric x);
const char* to_string(loss_kind x);
const char* to_string(precision_kind x);
/// "ring" or "gloo".
const char* to_string(node_collective x);
/// "fail" or "continue".
const char* to_string(node_loss_policy x);

}  // namespace troupe
