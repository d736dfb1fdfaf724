// The compute of one data-parallel replica, free of any actor code: a model whose parameters
// and gradients live in flat buffers, its optimizer, and its view of the data. A replica worker
// actor (actors/workers/replica_worker) drives it; tests and benchmarks can drive it directly.
//
// Thread safety: none. All calls must come from one thread at a time (the owning actor's).
#pragma once

#include "core/data/batch_loader.hpp"
#include "core/data/batch_plan.hpp"
#include "core/data/dataset.hpp"
#include "core/device/captured_step.hpp"
#include "core/device/device_transfer.hpp"
#include "core/model/flat_parameters.hpp"
#include "core/model/network.hpp"
#include "core/optim/flat_optimizer.hpp"
#include "core/train/engine_plans.hpp"
#include "core/train/loss_scaler.hpp"

#include <memory>
#include <optional>
#include <vector>

namespace troupe {

struct gradient_result {
  double loss = 0.0;    ///< mean loss over this replica's rows of the batch
  int64_t samples = 0;  ///< rows this replica processed
  /// Seconds the step waited for its rows: on the loader, or gathering them itself without one.
  double data_wait_s = 0.0;
};

/// Evaluation runs in chunks of this many test rows: about a training batch's, so that an
/// evaluation (no autograd graph kept) holds less than a training step does. At 1,000 rows the
/// Fashion-MNIST CNN's activations and convolution buffers took ~190 MB beyond its training
/// (bench/sync_overhead.py --model cnn). 125 divides the test set's shards for 2, 4 and 8
/// replicas, as 1,000 did.
inline constexpr int64_t eval_chunk_rows = 125;

struct evaluation_result {
  double loss_sum = 0.0;    ///< summed (not averaged) over rows, so shards add up
  double metric_sum = 0.0;  ///< the metric summed over rows (core/train/loss): correct rows, or
                            ///< squared or absolute errors
  int64_t count = 0;
  /// Classification: the rows' confusion counts (core/train/confusion); empty otherwise.
  std::vector<int64_t> confusion;
};

class replica_engine {
 public:
  /// `initial_weights` is the flat weight vector every replica starts from (same on all ranks).
  /// With a `transfer` the model, its optimizer and its batches live on transfer->device(), and
  /// the next step's batch is uploaded while this one computes; the data stays on the host.
  /// Without one (CPU workers) batches are used where they are. With settings.prefetch > 0 a
  /// loader thread gathers that many steps' rows ahead (core/data/batch_loader).
  replica_engine(const replica_plan& plan, dataset_ptr data, const at::Tensor& initial_weights,
                 device_transfer* transfer = nullptr);
  ~replica_engine();

  /// Zeroes the gradient, then runs forward and backward on this rank's rows of `step`'s global
  /// batch. With `scale_to_global` (sync) the gradient left in gradient() is scaled by
  /// rows/global batch, so the sum of all replicas' gradients is the gradient of the global
  /// batch's mean loss; without (local_sgd, async) it is the gradient of this replica's own mean
  /// loss, for a step of its own.
  /// With training.cuda_graph (and a transfer that offers graphs) the kernels of that work are
  /// recorded once, after captured_step::warmup_steps run eagerly, and replayed from then on.
  /// Throws diverged_error on a non-finite loss.
  gradient_result compute_gradient(int64_t step, bool scale_to_global);

  /// The flat gradient buffer. Must not be modified while another actor reads it.
  const at::Tensor& gradient() const { return flat_->grads(); }
  /// gradient() with this step's rows behind it (flat_parameters::gradient_with_rows): what a
  /// sync step sums among the replicas, so that the sum says how many rows it holds.
  const at::Tensor& gradient_with_rows() const { return flat_->gradient_with_rows(); }
  /// Makes `storage` ([size + 1]) the gradient buffer (flat_parameters::move_grads_into).
  void move_gradient_into(at::Tensor storage);

  /// Steps whose gradient came from a replay of the captured graph so far.
  int64_t replayed_steps() const { return graph_ ? graph_->replayed_steps() : 0; }

  /// Makes `combined` this replica's gradient, clips it as the job says, and takes one optimizer
  /// step with learning rate `lr` (the plan's rate for the step, times the async policy's
  /// staleness scale where that applies). Passing gradient() steps on this replica's own one.
  /// Under fp16 a gradient that is not finite (the scaled backward overflowed) is not applied:
  /// the step is skipped and the loss scale halves (core/train/loss_scaler).
  void apply(const at::Tensor& combined, double lr);
  /// Clips gradient() as the job says (apply does it too): where the gradient is applied in
  /// parts, by a sharded parameter server, none of which can see its whole norm.
  void clip_own_gradient();

  /// fp16: the scale of the next backward, and the steps skipped so far; 0 and 0 otherwise.
  double loss_scale() const { return scaler_ ? scaler_->scale() : 0.0; }
  int64_t skipped_steps() const { return scaler_ ? scaler_->skipped_steps() : 0; }

  /// This replica's share from now on: position `position` of `count` live replicas (a node
  /// was lost, or a replacement joined). Its rows of every global batch, and of the evaluation
  /// set, are that position's (core/data/batch_plan shard_of); the global batch stays the same.
  void set_share(int64_t position, int64_t count);
  int64_t share_count() const { return replicas_; }

  /// Overwrites the weights (e.g. with the replicas' average).
  void set_weights(const at::Tensor& flat);
  /// Overwrites the values [begin, begin + part.numel()) of the flat weights (a streaming
  /// fragment's average), or with `mix` < 1 moves them that share of the way to `part`
  /// (torch.lerp: a late average merged into values that trained on meanwhile).
  void set_weights_part(const at::Tensor& part, int64_t begin, double mix = 1);

  /// The optimizer's state as bytes (core/optim/make_optimizer), for a checkpoint; under fp16
  /// led by the loss scaler's state.
  std::string optimizer_state() const;
  /// Puts a checkpoint's weights and optimizer state back.
  void restore(const at::Tensor& flat, const std::string& optimizer_state);

  /// SGD's momentum buffers, concatenated in parameter order (zeros before the first step).
  /// Throws for other optimizers.
  at::Tensor momenta() const;
  void set_momenta(const at::Tensor& flat);

  /// Evaluates this rank's share of the evaluation set (the validation set, else the test set:
  /// core/data/dataset.hpp), or the given rows of a given set.
  evaluation_result evaluate();
  evaluation_result evaluate(const labeled_images& set, row_range rows);

  /// On the engine's device.
  const at::Tensor& weights() const { return flat_->weights(); }
  const flat_parameters& parameters() const { return *flat_; }

 private:
  using batch = loaded_batch;
  /// This rank's rows of `step`'s batch on the engine's device; adds what it waited for them to
  /// data_wait_s_.
  batch fetch(int64_t step);
  /// (Re)starts the loader for this replica's current rows (none with settings.prefetch 0).
  void start_loader();
  /// The model's forward; one that draws random numbers draws them seeded by (seed, rank, step,
  /// part) under core/model/random_draws.
  at::Tensor forward(const at::Tensor& input, int64_t step, int64_t part);
  /// Queues the gradient of `images` against `labels` into gradient() (zeroed first), the loss
  /// times `share`, the buffers' slots filled; returns the unscaled loss, on the device.
  at::Tensor queue_gradient(const at::Tensor& images, const at::Tensor& labels, int64_t step,
                            double share);
  /// queue_gradient through the captured graph: eager while warming up or for a batch of
  /// another shape or share than the captured one, else the graph's inputs refilled and replayed.
  at::Tensor graphed_gradient(const batch& b, int64_t step, double share);

  int64_t rank_;
  int64_t position_;  ///< among the live replicas (the rank while none was lost)
  int64_t replicas_;  ///< live replicas sharing each batch
  training_config training_;
  uint64_t seed_;
  bool draws_;  ///< the model's forward draws random numbers
  int64_t global_batch_;
  dataset_ptr data_;
  network model_;
  std::unique_ptr<flat_parameters> flat_;
  std::unique_ptr<flat_optimizer> optimizer_;
  std::optional<loss_scaler> scaler_;  ///< fp16 only
  /// fp16: scaler_'s scale and its inverse as 0-dim tensors on the model's device, refilled
  /// before each step: the values a captured step reads anew at every replay.
  at::Tensor loss_scale_, loss_unscale_;
  batch_plan plan_;
  row_range rows_;
  device_transfer* transfer_;
  batch prefetched_;  ///< with a transfer: the next step's batch, on its way to the device
  /// training.cuda_graph, where the transfer offers graphs: the recorded gradient step.
  std::unique_ptr<captured_step> graph_;
  int64_t prefetch_;
  double data_wait_s_ = 0.0;  ///< since the last compute_gradient returned
  /// Last: its thread reads data_ and stops before the members above are destroyed.
  std::unique_ptr<batch_loader> loader_;
};

/// Evaluates the whole `set` with the model of `settings` holding the flat weights `weights`, on
/// the calling thread (the test set's one evaluation at the end of a run with a validation set).
evaluation_result evaluate_weights(const training_settings& settings, const dataset_ptr& data,
                                   const at::Tensor& weights, const labeled_images& set);

/// The flat weights a run starts from: the built-in model's default initialization under the
/// seed, or the weights and buffers saved in a TorchScript file. Deterministic for a seed; uses
/// LibTorch's global generator, so call it from one thread.
at::Tensor initial_weights(const training_settings& settings, int64_t classes);

}  // namespace troupe
