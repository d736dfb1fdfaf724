#include "core/ensemble/ensemble_engine.hpp"

#include "core/ensemble/ensemble_members.hpp"
#include "core/errors.hpp"
#include "core/model/flat_parameters.hpp"
#include "core/model/model_builder.hpp"
#include "core/model/network.hpp"
#include "core/model/random_draws.hpp"
#include "core/optim/clip_gradient.hpp"
#include "core/optim/make_optimizer.hpp"
#include "core/train/autocast_scope.hpp"
#include "core/train/confusion.hpp"
#include "core/train/replica_engine.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/nn/functional/loss.h>

#include <cmath>

namespace troupe {
namespace {

// The members' rows of `step` on the host: one batch all share ([B, row...], labels [B]), or one
// per member in its own order ([K, B, row...], [K, B]).
loaded_batch gather_members(const dataset& data, std::vector<batch_plan>& plans, int64_t batch,
                            int64_t step) {
  if (plans.size() == 1) {
    const auto index = plans[0].indices(step, {0, batch});
    return {step, data.train.images.gather(index, step), data.train.labels.index_select(0, index)};
  }
  std::vector<at::Tensor> indices;
  for (auto& plan : plans)
    indices.push_back(plan.indices(step, {0, batch}));
  const auto index = at::stack(indices);  // [K, B]
  const auto k = static_cast<int64_t>(plans.size());
  std::vector<int64_t> shape{k, batch};
  const auto& row = data.train.images.row_shape();
  shape.insert(shape.end(), row.begin(), row.end());
  return {step, data.train.images.gather(index.reshape({-1}), step).reshape(shape),
          data.train.labels.index_select(0, index.reshape({-1})).reshape({k, batch})};
}

std::vector<at::Tensor> every_member_initial_weights(const ensemble_plan& plan, int64_t classes) {
  std::vector<at::Tensor> initial;
  for (int64_t k = 0; k < plan.ensemble.members; ++k)
    initial.push_back(member_initial_weights(plan.settings, k, classes));
  return initial;
}

}  // namespace

ensemble_engine::ensemble_engine(const ensemble_plan& plan, dataset_ptr data,
                                 device_transfer* transfer)
    : batch_(plan.settings.global_batch),
      data_(std::move(data)),
      transfer_(transfer),
      model_(member_layers(plan.settings.model, data_->classes),
             every_member_initial_weights(plan, data_->classes),
             transfer != nullptr ? transfer->device() : c10::Device(c10::kCPU)),
      training_(plan.settings.training) {
  const auto& settings = plan.settings;
  optimizer_ = make_optimizer(settings.optimizer, model_.parameters());
  const auto k = plan.ensemble.members;
  const int64_t plans = plan.ensemble.distinct_data_order ? k : 1;
  for (int64_t p = 0; p < plans; ++p)
    plans_.emplace_back(data_->train.size(), batch_, settings.seed + static_cast<uint64_t>(p));
  if (settings.prefetch > 0)
    loader_ = std::make_unique<batch_loader>(
        [data = data_, plans = plans_, batch = batch_](int64_t step) mutable {
          return gather_members(*data, plans, batch, step);
        },
        settings.prefetch);
  if (!plan.ensemble.lrs.empty()) {
    std::vector<float> scale;
    for (double lr : plan.ensemble.lrs)
      scale.push_back(static_cast<float>(lr / settings.optimizer.lr));
    lr_scale_ = at::tensor(scale);
    if (transfer_ != nullptr)
      lr_scale_ = lr_scale_.to(transfer_->device());
  }
  // Gradients that exist from the start and are zeroed in place, never replaced: a recorded
  // step writes into the tensors it saw at capture.
  for (auto& p : model_.parameters())
    p.mutable_grad() = at::zeros_like(p);
  if (training_.cuda_graph)  // a stacked model draws nothing (stacked_model refuses dropout)
    graph_ = make_captured_step(transfer_);
}

ensemble_engine::~ensemble_engine() = default;

at::Tensor ensemble_engine::to_device(const at::Tensor& host) const {
  return transfer_ != nullptr ? transfer_->upload(host) : host;
}

at::Tensor ensemble_engine::forward(const at::Tensor& inputs, bool per_member) const {
  return in_precision(training_.precision, inputs.device().type(),
                      [&] { return model_.forward(inputs, per_member); });
}

loaded_batch ensemble_engine::gather(int64_t step) {
  return take_batch(
      loader_.get(), step, [this](int64_t s) { return gather_members(*data_, plans_, batch_, s); },
      data_wait_s_);
}

at::Tensor ensemble_engine::queue_gradients(const at::Tensor& images, const at::Tensor& labels) {
  const auto k = model_.members();
  const auto parameters = model_.parameters();
  {
    torch::NoGradGuard no_grad;
    for (const auto& p : parameters)
      p.grad().zero_();
  }
  const bool per_member = plans_.size() > 1;
  const auto logits = forward(images, per_member);  // [K, B, classes]
  const auto targets = per_member ? labels : labels.unsqueeze(0).expand({k, batch_});
  // Per member: the mean loss over its rows. Their sum's gradient is each member's own.
  auto per_row = torch::nn::functional::cross_entropy(
      logits.reshape({k * batch_, -1}), targets.reshape({-1}),
      torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kNone));
  auto losses = per_row.reshape({k, batch_}).mean(1);
  losses.sum().backward();
  std::vector<at::Tensor> gradients;
  for (const auto& p : parameters)
    gradients.push_back(p.grad());
  clip_member_gradients(gradients, training_);
  if (lr_scale_.defined()) {
    torch::NoGradGuard no_grad;
    for (auto& g : gradients) {
      std::vector<int64_t> shape(static_cast<std::size_t>(g.dim()), 1);
      shape[0] = k;
      g.mul_(lr_scale_.view(shape));
    }
  }
  return losses.detach();
}

double ensemble_engine::step(int64_t step, double lr) {
  const auto b = gather(step);
  const auto images = to_device(b.images);
  const auto labels = to_device(b.labels);
  const auto losses =
      graph_ ? graph_->run({images, labels}, 0,
                           [this](const std::vector<at::Tensor>& in) {
                             return std::vector<at::Tensor>{queue_gradients(in[0], in[1])};
                           })[0]
             : queue_gradients(images, labels);
  const auto mean = losses.mean();
  // The step's one wait for the device: every member's loss, checked before any member steps.
  const auto on_host = losses.to(at::kCPU);
  if (!at::isfinite(on_host).all().item<bool>()) {
    const auto m = at::logical_not(at::isfinite(on_host)).nonzero()[0][0].item<int64_t>();
    throw diverged_error("loss is " + std::to_string(on_host[m].item<double>()) + " at step " +
                         std::to_string(step) + " for ensemble member " + std::to_string(m));
  }
  set_learning_rate(*optimizer_, lr);
  optimizer_->step();
  return mean.item<double>();
}

ensemble_evaluation ensemble_engine::evaluate(const labeled_images& set) const {
  torch::NoGradGuard no_grad;
  const auto k = model_.members();
  ensemble_evaluation r;
  r.loss_sum.assign(static_cast<std::size_t>(k), 0.0);
  r.correct.assign(static_cast<std::size_t>(k), 0);
  const auto sum = torch::nn::functional::CrossEntropyFuncOptions().reduction(torch::kSum);
  for (int64_t begin = 0; begin < set.size(); begin += eval_chunk_rows) {
    const int64_t n = std::min(eval_chunk_rows, set.size() - begin);
    auto images = to_device(set.images.range(begin, n));
    auto labels = to_device(set.labels.narrow(0, begin, n));
    const auto logits = forward(images, false);  // [K, n, classes]
    for (int64_t m = 0; m < k; ++m) {
      r.loss_sum[static_cast<std::size_t>(m)] +=
          torch::nn::functional::cross_entropy(logits[m], labels, sum).item<double>();
      r.correct[static_cast<std::size_t>(m)] +=
          logits[m].argmax(1).eq(labels).sum().item<int64_t>();
    }
    auto probabilities = logits.softmax(2).mean(0);  // [n, classes]
    r.ensemble_loss_sum += torch::nn::functional::nll_loss(
                               probabilities.log(), labels,
                               torch::nn::functional::NLLLossFuncOptions().reduction(torch::kSum))
                               .item<double>();
    r.ensemble_correct += probabilities.argmax(1).eq(labels).sum().item<int64_t>();
    add_confusion(r.confusion, probabilities, labels, probabilities.size(1));
    r.count += n;
  }
  return r;
}

at::Tensor ensemble_engine::weights() const {
  std::vector<at::Tensor> flat;
  for (const auto& p : model_.parameters())
    flat.push_back(p.detach().reshape({-1}));
  return at::cat(flat).to(at::kCPU);  // a copy already: cat's
}

std::string ensemble_engine::optimizer_state() const {
  return save_optimizer(*optimizer_);
}

void ensemble_engine::restore(const at::Tensor& flat, const std::string& optimizer) {
  set_weights(flat);
  load_optimizer(*optimizer_, optimizer);
}

void ensemble_engine::set_weights(const at::Tensor& flat) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (auto& p : model_.parameters()) {
    const auto n = p.numel();
    if (offset + n > flat.numel())
      throw std::runtime_error("the checkpoint's ensemble weights are too short");
    p.copy_(flat.slice(0, offset, offset + n).view_as(p));
    offset += n;
  }
  if (offset != flat.numel())
    throw std::runtime_error("the checkpoint's ensemble weights have " +
                             std::to_string(flat.numel()) + " values, the ensemble " +
                             std::to_string(offset));
}

}  // namespace troupe
