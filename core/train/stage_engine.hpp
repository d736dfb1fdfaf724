// The compute of one pipeline stage, free of any actor code: a consecutive slice of the model's
// layers (with their PyTorch names), its flat parameters and optimizer, and the activations it
// holds between a micro-batch's forward and backward. A stage actor (actors/workers/stage_worker)
// executes its schedule through it; tests and benchmarks can drive it directly.
//
// Micro-batch m's loss is scaled by its rows / the global batch before backward, so the
// gradients accumulated over all micro-batches (and summed over pipelines) are exactly the
// gradient of the global batch's mean loss: the same mini-batch SGD as unpartitioned training.
//
// On a GPU (a `device_transfer` given) the slice, its flat parameters and optimizer state live on
// the device; stage 0's images and the last stage's labels go there through the transfer. The
// activations and gradients a stage is handed must already be on its device (the stage actor
// brings them there); weights() and step_gradient() stay on the device.
//
// Thread safety: none. All calls must come from one thread at a time (the owning actor's).
#pragma once

#include "core/data/batch_loader.hpp"
#include "core/data/batch_plan.hpp"
#include "core/data/dataset.hpp"
#include "core/device/device_transfer.hpp"
#include "core/model/flat_parameters.hpp"
#include "core/model/network.hpp"
#include "core/optim/flat_optimizer.hpp"
#include "core/pipeline/stage_split.hpp"
#include "core/train/replica_engine.hpp"

#include <map>
#include <memory>
#include <utility>

namespace troupe {

class stage_engine {
 public:
  /// `initial_weights` is the whole model's flat weight vector; the stage keeps its slice.
  /// `transfer` (GPU stages; nullptr on the CPU) must outlive the engine.
  stage_engine(const stage_plan& plan, dataset_ptr data, const at::Tensor& initial_weights,
               device_transfer* transfer = nullptr);
  ~stage_engine();

  /// Zeroes the accumulated gradient and the step's loss; call before a step's first operation.
  void begin_step(int64_t step);

  /// Micro-batch m of the current step. The first stage reads its images (`input` undefined);
  /// others take the previous stage's activation. Returns the activation for the next stage;
  /// the last stage computes the loss instead and returns an undefined tensor.
  /// Throws diverged_error on a non-finite loss.
  at::Tensor forward(int64_t micro, const at::Tensor& input);

  /// Backward of micro-batch m: the last stage starts from its loss (`grad_output` undefined),
  /// others from the next stage's gradient. Accumulates into gradient() and returns the
  /// gradient of the stage's input for the previous stage (undefined on the first stage).
  at::Tensor backward(int64_t micro, const at::Tensor& grad_output);

  /// Micro-batches whose forward ran and backward has not.
  int64_t live_activations() const { return static_cast<int64_t>(saved_.size()); }

  /// Last stage, after the step's forwards: the mean loss over this pipeline's rows.
  double step_loss() const;
  /// This pipeline's rows in a step.
  int64_t step_rows() const { return rows_.size(); }
  /// Stage 0: seconds the steps since the last call waited for their rows (on the loader when
  /// it was behind, or gathering them without one); 0 on the other stages.
  double take_data_wait_s() { return std::exchange(data_wait_s_, 0.0); }

  /// After the step's last backward: the accumulated gradient, with the buffers' slots filled
  /// (their values times this pipeline's share of the global batch).
  const at::Tensor& step_gradient();
  /// Makes `combined` the gradient, clips it as the job says (a stage clips by value only: the
  /// global norm spans the stages) and takes one optimizer step with learning rate `lr`.
  void apply(const at::Tensor& combined, double lr);
  const at::Tensor& weights() const { return flat_->weights(); }
  /// The optimizer's state as bytes, for a checkpoint; restore puts both back.
  std::string optimizer_state() const;
  void restore(const at::Tensor& weights, const std::string& optimizer_state);
  const flat_parameters& parameters() const { return *flat_; }

  /// Evaluation of this pipeline's share of the evaluation set (validation, else test), in chunks
  /// that flow through the stages like micro-batches (no gradients kept).
  int64_t eval_chunks() const;
  /// Forward of chunk c: the first stage reads its images; the result goes to the next stage.
  at::Tensor eval_forward(int64_t chunk, const at::Tensor& input);
  /// Last stage: scores the logits of chunk c against its labels.
  evaluation_result eval_score(int64_t chunk, const at::Tensor& logits) const;

 private:
  struct saved_activation {
    at::Tensor input;   ///< the detached input whose gradient goes back (undefined on stage 0)
    at::Tensor output;  ///< the activation sent on, or the scaled loss on the last stage
  };

  row_range micro_range(int64_t micro) const;
  row_range eval_range(int64_t chunk) const;
  /// The slice's forward; one that draws random numbers draws them seeded by (seed, this stage
  /// of this pipeline, step, part) under core/model/random_draws.
  at::Tensor forward_slice(const at::Tensor& input, int64_t step, int64_t part);

  /// Stage 0: `step`'s rows of this pipeline on the host, from the loader (or gathered here
  /// without one); adds what it waited to data_wait_s_.
  at::Tensor fetch_rows(int64_t step);
  /// `host` on the stage's device (itself on the CPU).
  at::Tensor on_device(const at::Tensor& host) const;

  stage_position where_;
  training_config training_;
  std::vector<row_range> micro_batches_;
  int64_t global_batch_;
  uint64_t seed_;
  dataset_ptr data_;
  device_transfer* transfer_;
  network module_;
  bool draws_ = false;  ///< the slice's forward draws random numbers
  std::unique_ptr<flat_parameters> flat_;
  std::unique_ptr<flat_optimizer> optimizer_;
  batch_plan plan_;
  row_range rows_;       ///< this pipeline's rows of every global batch
  row_range eval_rows_;  ///< this pipeline's share of the evaluation set
  int64_t step_ = 0;
  double loss_sum_ = 0;  ///< sum over micro-batches of mean loss x rows
  std::map<int64_t, saved_activation> saved_;
  at::Tensor step_images_;  ///< stage 0: the step's rows of this pipeline, cut into micro-batches
  double data_wait_s_ = 0;
  /// Stage 0 with settings.prefetch > 0. Last: its thread reads data_ until it is stopped.
  std::unique_ptr<batch_loader> loader_;
};

}  // namespace troupe
