// The compute of a stacked ensemble, free of actor code: K members of the job's model in one
// stacked_model with one optimizer. Member k starts from the weights a lone run with seed
// job.seed + k would start from; it trains on the job's data order, or with
// `distinct_data_order` on the order of seed job.seed + k; with `lrs` it steps with its own
// learning rate (SGD, as a per-member gradient scale, which momentum carries over exactly).
// With a device_transfer the stacked model lives on its device (a GPU) and every batch goes
// there through it; what leaves the engine (weights, each member's) is on the host. With
// settings.prefetch > 0 a loader thread gathers the members' rows of the next steps ahead
// (core/data/batch_loader): the same batches, so no bit of training changes. With
// training.cuda_graph on a GPU the members' gradient work (forward, loss, backward, clipping,
// their learning rates) is recorded once and replayed (core/device/captured_step); the optimizer
// steps eagerly after it, since its learning rate changes from step to step.
//
// Thread safety: none; one thread drives it.
#pragma once

#include "core/data/batch_loader.hpp"
#include "core/data/batch_plan.hpp"
#include "core/data/dataset.hpp"
#include "core/device/captured_step.hpp"
#include "core/device/device_transfer.hpp"
#include "core/ensemble/stacked_model.hpp"
#include "core/train/engine_plans.hpp"

#include <torch/optim/optimizer.h>

#include <memory>
#include <utility>
#include <vector>

namespace troupe {

struct ensemble_evaluation {
  std::vector<double> loss_sum;  ///< by member
  std::vector<int64_t> correct;  ///< by member
  double ensemble_loss_sum = 0;  ///< of the averaged probabilities
  int64_t ensemble_correct = 0;  ///< argmax of the averaged probabilities
  int64_t count = 0;
  /// The averaged prediction's confusion counts (core/train/confusion).
  std::vector<int64_t> confusion;
};

class ensemble_engine {
 public:
  /// `transfer`: the device the members compute on and how batches get there; null: the CPU.
  /// Not owned; it outlives the engine.
  ensemble_engine(const ensemble_plan& plan, dataset_ptr data, device_transfer* transfer = nullptr);
  ~ensemble_engine();

  /// One optimizer step of every member on its batch of `step`, each member's gradient clipped
  /// as the job says (by its own norm), with learning rate `lr` (a member's own lr scales it).
  /// Returns the members' mean loss; throws diverged_error naming the member whose loss is not
  /// finite.
  double step(int64_t step, double lr);

  /// Seconds the steps since the last call waited for their rows (on the loader when it was
  /// behind, or gathering them without one): the step's data_wait_s.
  double take_data_wait_s() { return std::exchange(data_wait_s_, 0.0); }

  /// Steps whose gradients came from a replay of the captured graph so far.
  int64_t replayed_steps() const { return graph_ ? graph_->replayed_steps() : 0; }

  /// Every member, and their averaged prediction, on the whole test set.
  ensemble_evaluation evaluate(const labeled_images& set) const;

  int64_t members() const { return model_.members(); }
  const dataset_ptr& data() const { return data_; }
  std::vector<std::pair<std::string, at::Tensor>> member_weights(int64_t k) const {
    return model_.member_weights(k);
  }

  /// Every member's parameters as one flat tensor (a copy), and the optimizer's state: what a
  /// checkpoint holds. restore() puts both back, exactly.
  at::Tensor weights() const;
  std::string optimizer_state() const;
  void restore(const at::Tensor& flat, const std::string& optimizer);
  /// Only the weights (a run's final ones, to save each member's or evaluate them). Throws
  /// std::runtime_error when `flat` does not hold every member's parameters.
  void set_weights(const at::Tensor& flat);

 private:
  at::Tensor to_device(const at::Tensor& host) const;
  /// `step`'s rows for every member, on the host: what the loader makes ahead.
  loaded_batch gather(int64_t step);
  /// The stacked forward in the job's precision (core/train/autocast_scope), widened to float32.
  at::Tensor forward(const at::Tensor& inputs, bool per_member) const;
  /// Queues every member's gradient of its batch (`images` and `labels` on the device, as
  /// gather() lays them out) into the parameters' gradients, zeroed first, clipped and scaled by
  /// the members' learning rates; returns each member's mean loss [K], on the device. Device
  /// work only: what a captured step records.
  at::Tensor queue_gradients(const at::Tensor& images, const at::Tensor& labels);

  int64_t batch_;
  dataset_ptr data_;
  device_transfer* transfer_;
  stacked_model model_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::vector<batch_plan> plans_;  ///< one shared plan, or one per member
  at::Tensor lr_scale_;            ///< [K], or undefined when every member has the job's lr
  training_config training_;       ///< its clipping
  /// training.cuda_graph, where the transfer offers graphs: the recorded gradient work.
  std::unique_ptr<captured_step> graph_;
  double data_wait_s_ = 0;
  /// Last: its thread reads data_ and its own copies of plans_ until the destructor stops it.
  std::unique_ptr<batch_loader> loader_;
};

}  // namespace troupe
