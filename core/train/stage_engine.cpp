#include "core/train/stage_engine.hpp"

#include "core/errors.hpp"
#include "core/optim/clip_gradient.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>
#include "core/model/random_draws.hpp"
#include "core/train/confusion.hpp"
#include "core/train/loss.hpp"

#include <cmath>
#include <string>

namespace troupe {
namespace {

// The stage's layers, taken out of a whole model that holds the job's initial weights, so that
// the stage starts exactly where an unpartitioned replica would.
network slice_of(const model_config& model, int64_t classes, const at::Tensor& initial_weights,
                 const stage_slice& slice, device_transfer* transfer) {
  network whole(model, classes);
  {
    flat_parameters flat(whole.named_parameters(), whole.named_buffers());
    TORCH_CHECK(initial_weights.numel() == flat.size(), "initial weights have ",
                initial_weights.numel(), " elements, the model has ", flat.size());
    torch::NoGradGuard no_grad;
    flat.weights().copy_(initial_weights);
    flat.load_buffers();
  }
  auto part = whole.slice(slice.begin, slice.end);
  if (transfer != nullptr && !transfer->device().is_cpu())
    part.to(transfer->device());
  return part;
}

// Pipeline rows `rows` of `step`'s global batch, the images only (the last stage reads the
// labels itself): what the first stage's loader makes ahead.
loaded_batch pipeline_rows(const dataset& data, batch_plan& plan, row_range rows, int64_t step) {
  return {step, data.train.images.gather(plan.indices(step, rows), step), {}};
}

}  // namespace

stage_engine::stage_engine(const stage_plan& plan, dataset_ptr data,
                           const at::Tensor& initial_weights, device_transfer* transfer)
    : where_(plan.where),
      training_(plan.settings.training),
      micro_batches_(plan.micro_batches),
      global_batch_(plan.settings.global_batch),
      seed_(plan.settings.seed),
      data_(std::move(data)),
      transfer_(transfer),
      module_(
          slice_of(plan.settings.model, data_->classes, initial_weights, plan.layers, transfer)),
      plan_(data_->train.size(), plan.settings.global_batch, plan.settings.seed),
      rows_(plan.rows),
      eval_rows_(shard_of(evaluation_set(*data_).size(), where_.pipelines, where_.pipeline)) {
  flat_ = std::make_unique<flat_parameters>(module_.named_parameters(), module_.named_buffers());
  optimizer_ =
      std::make_unique<flat_optimizer>(plan.settings.optimizer, *flat_, module_.parameters());
  draws_ = !module_.random_ops().empty();
  // Stage 0 reads the data; the loader gathers its pipeline's rows of the next steps ahead.
  if (where_.first() && plan.settings.prefetch > 0)
    loader_ = std::make_unique<batch_loader>(
        [data = data_, plan = plan_, rows = rows_](int64_t step) mutable {
          return pipeline_rows(*data, plan, rows, step);
        },
        plan.settings.prefetch);
}

stage_engine::~stage_engine() = default;

at::Tensor stage_engine::fetch_rows(int64_t step) {
  return take_batch(
             loader_.get(), step,
             [this](int64_t s) { return pipeline_rows(*data_, plan_, rows_, s); }, data_wait_s_)
      .images;
}

at::Tensor stage_engine::on_device(const at::Tensor& host) const {
  return transfer_ != nullptr ? transfer_->upload(host) : host;
}

at::Tensor stage_engine::forward_slice(const at::Tensor& input, int64_t step, int64_t part) {
  if (!draws_)
    return module_.forward(input);
  const auto worker = where_.pipeline * where_.stages + where_.stage;
  seeded_draws draws(draw_seed(seed_, worker, step, part));
  return module_.forward(input);
}

row_range stage_engine::micro_range(int64_t micro) const {
  return micro_batches_.at(static_cast<std::size_t>(micro));
}

void stage_engine::begin_step(int64_t step) {
  if (where_.first())
    step_images_ = on_device(fetch_rows(step));
  flat_->grads().zero_();
  module_.set_training(true);
  step_ = step;
  loss_sum_ = 0;
  saved_.clear();
}

at::Tensor stage_engine::forward(int64_t micro, const at::Tensor& input) {
  TORCH_CHECK(saved_.count(micro) == 0, "forward of micro-batch ", micro, " twice in step ", step_);
  const auto rows = micro_range(micro);
  at::Tensor index;
  if (where_.last())
    index = plan_.indices(step_, rows);
  saved_activation saved;
  at::Tensor x;
  if (where_.first()) {
    // The micro-batch's rows of the step's: gathered row by row (augmentation is drawn per row
    // and step), the same rows and pixels as a gather of the micro-batch alone.
    x = step_images_.narrow(0, rows.begin - rows_.begin, rows.size());
  } else {
    TORCH_CHECK(input.defined(), "stage ", where_.stage, " got no activation for micro-batch ",
                micro);
    // A leaf of this stage's graph: its gradient is what the previous stage needs.
    saved.input = input.detach().requires_grad_(true);
    x = saved.input;
  }
  auto out = forward_slice(x, step_, micro);
  if (!where_.last()) {
    saved.output = out;
    saved_.emplace(micro, std::move(saved));
    return out;
  }
  auto labels = on_device(data_->train.labels.index_select(0, index));
  auto loss = mean_loss(training_.loss, out, labels);
  const double value = loss.item<double>();
  if (!std::isfinite(value))
    throw diverged_error("loss is " + std::to_string(value) + " at step " + std::to_string(step_) +
                         " on pipeline " + std::to_string(where_.pipeline) + ", micro-batch " +
                         std::to_string(micro));
  loss_sum_ += value * static_cast<double>(rows.size());
  saved.output = loss * (static_cast<double>(rows.size()) / static_cast<double>(global_batch_));
  saved_.emplace(micro, std::move(saved));
  return {};
}

at::Tensor stage_engine::backward(int64_t micro, const at::Tensor& grad_output) {
  auto it = saved_.find(micro);
  TORCH_CHECK(it != saved_.end(), "backward of micro-batch ", micro,
              " without its forward in step ", step_);
  auto saved = std::move(it->second);
  saved_.erase(it);
  if (where_.last()) {
    saved.output.backward();
  } else {
    TORCH_CHECK(grad_output.defined(), "stage ", where_.stage, " got no gradient for micro-batch ",
                micro);
    saved.output.backward(grad_output);
  }
  return where_.first() ? at::Tensor() : saved.input.grad();
}

const at::Tensor& stage_engine::step_gradient() {
  // The buffers' slots: their values after the step's forwards, times this pipeline's share of
  // the global batch, so that the sum over the pipelines is their mean.
  flat_->gather_buffers(static_cast<double>(rows_.size()) / static_cast<double>(global_batch_));
  return flat_->grads();
}

double stage_engine::step_loss() const {
  return loss_sum_ / static_cast<double>(rows_.size());
}

void stage_engine::apply(const at::Tensor& combined, double lr) {
  {
    torch::NoGradGuard no_grad;
    if (!combined.is_same(flat_->grads()))
      flat_->grads().copy_(combined);
  }
  // One stage holds the whole model only in a pipeline of one stage (micro-batching), where a
  // norm over its gradient is the global norm; the plan refuses norm clipping across stages.
  clip_gradient(flat_->parameter_grads(), training_);
  optimizer_->step(lr);
  flat_->adopt_combined_buffers();
}

std::string stage_engine::optimizer_state() const {
  return optimizer_->save();
}

void stage_engine::restore(const at::Tensor& weights, const std::string& optimizer_state) {
  {
    torch::NoGradGuard no_grad;
    flat_->weights().copy_(weights);
  }
  flat_->load_buffers();
  optimizer_->load(optimizer_state);
}

row_range stage_engine::eval_range(int64_t chunk) const {
  const auto begin = eval_rows_.begin + chunk * eval_chunk_rows;
  return {begin, std::min(begin + eval_chunk_rows, eval_rows_.end)};
}

int64_t stage_engine::eval_chunks() const {
  return (eval_rows_.size() + eval_chunk_rows - 1) / eval_chunk_rows;
}

at::Tensor stage_engine::eval_forward(int64_t chunk, const at::Tensor& input) {
  torch::NoGradGuard no_grad;
  module_.set_training(false);
  if (where_.first()) {
    const auto rows = eval_range(chunk);
    return forward_slice(on_device(evaluation_set(*data_).images.range(rows.begin, rows.size())),
                         -1, chunk);
  }
  TORCH_CHECK(input.defined(), "stage ", where_.stage, " got no activation for test chunk ", chunk);
  return forward_slice(input, -1, chunk);
}

evaluation_result stage_engine::eval_score(int64_t chunk, const at::Tensor& logits) const {
  torch::NoGradGuard no_grad;
  const auto rows = eval_range(chunk);
  auto labels = on_device(evaluation_set(*data_).labels.narrow(0, rows.begin, rows.size()));
  TORCH_CHECK(logits.size(0) == rows.size(), "test chunk ", chunk, " has ", logits.size(0),
              " rows of logits for ", rows.size(), " labels");
  evaluation_result r;
  const auto sums = summed_loss(training_.loss, logits, labels);
  if (training_.loss == loss_kind::cross_entropy)
    add_confusion(r.confusion, logits, labels, data_->classes);
  r.loss_sum = sums.loss;
  r.metric_sum = sums.metric;
  r.count = rows.size();
  return r;
}

}  // namespace troupe
