#include "core/train/replica_engine.hpp"

#include "core/errors.hpp"
#include "core/model/model_builder.hpp"
#include "core/model/random_draws.hpp"
#include "core/optim/clip_gradient.hpp"
#include "core/optim/optimizer_state_key.hpp"
#include "core/train/autocast_scope.hpp"
#include "core/train/confusion.hpp"
#include "core/train/loss.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/autograd.h>
#include <torch/csrc/autograd/grad_mode.h>
#include <torch/optim/sgd.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>

namespace troupe {

replica_engine::replica_engine(const replica_plan& plan, dataset_ptr data,
                               const at::Tensor& initial_weights, device_transfer* transfer)
    : rank_(plan.rank),
      position_(plan.rank),
      replicas_(plan.replicas),
      training_(plan.settings.training),
      seed_(plan.settings.seed),
      draws_(false),
      global_batch_(plan.settings.global_batch),
      data_(std::move(data)),
      model_(plan.settings.model, data_->classes),
      plan_(data_->train.size(), plan.settings.global_batch, plan.settings.seed),
      rows_(plan.rows),
      transfer_(transfer),
      prefetch_(plan.settings.prefetch) {
  if (transfer_ != nullptr && !transfer_->device().is_cpu())
    model_.to(transfer_->device());
  flat_ = std::make_unique<flat_parameters>(model_.named_parameters(), model_.named_buffers());
  TORCH_CHECK(initial_weights.numel() == flat_->size(), "initial weights have ",
              initial_weights.numel(), " elements, the model has ", flat_->size());
  {
    torch::NoGradGuard no_grad;
    flat_->weights().copy_(initial_weights);
  }
  flat_->load_buffers();
  optimizer_ =
      std::make_unique<flat_optimizer>(plan.settings.optimizer, *flat_, model_.parameters());
  draws_ = !model_.random_ops().empty();
  if (training_.precision == precision_kind::fp16) {
    scaler_.emplace(training_.loss_scale);
    loss_scale_ = at::empty({}, flat_->weights().options());
    loss_unscale_ = at::empty({}, flat_->weights().options());
  }
  if (training_.cuda_graph && transfer_ != nullptr) {
    // A replay draws nothing anew: dropout's masks would repeat every step.
    if (draws_)
      throw std::invalid_argument(
          "training.cuda_graph: the model draws random numbers in its forward (dropout), which "
          "a captured step would replay unchanged; run it without cuda_graph");
    graph_ = make_captured_step(transfer_);
  }
  start_loader();
}

replica_engine::~replica_engine() = default;

at::Tensor replica_engine::forward(const at::Tensor& input, int64_t step, int64_t part) {
  if (!draws_)
    return model_.forward(input);
  seeded_draws draws(draw_seed(seed_, rank_, step, part));
  return model_.forward(input);
}

void replica_engine::set_weights_part(const at::Tensor& part, int64_t begin, double mix) {
  torch::NoGradGuard no_grad;
  auto own = flat_->weights().narrow(0, begin, part.numel());
  if (mix == 1)
    own.copy_(part.reshape({-1}));
  else
    own.lerp_(part.reshape({-1}).to(own.device()), mix);
  flat_->load_buffers();
}

namespace {

// `rows` of `step`'s global batch, on the host: what the loader makes ahead, or fetch makes
// itself without one. `plan` is the caller's own (it caches an epoch's order).
loaded_batch gather_rows(const dataset& data, batch_plan& plan, row_range rows, int64_t step) {
  const auto index = plan.indices(step, rows);
  return {step, data.train.images.gather(index, step), data.train.labels.index_select(0, index)};
}

}  // namespace

void replica_engine::start_loader() {
  loader_.reset();
  if (prefetch_ <= 0)
    return;
  loader_ = std::make_unique<batch_loader>(
      [data = data_, plan = batch_plan(data_->train.size(), global_batch_, seed_),
       rows = rows_](int64_t step) mutable { return gather_rows(*data, plan, rows, step); },
      prefetch_);
}

replica_engine::batch replica_engine::fetch(int64_t step) {
  if (prefetched_.step == step)
    return std::exchange(prefetched_, batch{});
  auto b = take_batch(
      loader_.get(), step, [this](int64_t s) { return gather_rows(*data_, plan_, rows_, s); },
      data_wait_s_);
  if (transfer_ != nullptr) {
    b.images = transfer_->upload(b.images);
    b.labels = transfer_->upload(b.labels);
  }
  return b;
}

at::Tensor replica_engine::queue_gradient(const at::Tensor& images, const at::Tensor& labels,
                                          int64_t step, double share) {
  flat_->grads().zero_();
  auto loss = mean_loss(training_.loss,
                        in_precision(training_.precision, images.device().type(),
                                     [&] { return forward(images, step, 0); }),
                        labels);
  auto unscaled = loss.detach();
  if (share != 1.0)
    loss = loss * share;
  if (scaler_)  // fp16: small gradients kept clear of float16's underflow, unscaled just after
    loss = loss * loss_scale_;
  loss.backward();
  if (scaler_) {
    torch::NoGradGuard no_grad;
    flat_->parameter_grads().mul_(loss_unscale_);
  }
  flat_->gather_buffers(share);
  return unscaled;
}

at::Tensor replica_engine::graphed_gradient(const batch& b, int64_t step, double share) {
  // The share is the recording's constant; the step only seeds draws, which a graphed model
  // has none of.
  return graph_->run({b.images, b.labels}, share,
                     [this, step, share](const std::vector<at::Tensor>& in) {
                       return std::vector<at::Tensor>{queue_gradient(in[0], in[1], step, share)};
                     })[0];
}

void replica_engine::move_gradient_into(at::Tensor storage) {
  if (graph_)
    graph_->forget();  // it wrote into the old buffer
  flat_->move_grads_into(std::move(storage));
}

gradient_result replica_engine::compute_gradient(int64_t step, bool scale_to_global) {
  const auto b = fetch(step);
  // On a GPU the next batch's copy overlaps this step's kernels.
  if (transfer_ != nullptr)
    prefetched_ = fetch(step + 1);
  model_.set_training(true);
  const bool scaled = scale_to_global && rows_.size() != global_batch_;
  const double share =
      scaled ? static_cast<double>(rows_.size()) / static_cast<double>(global_batch_) : 1.0;
  if (scaler_) {
    loss_scale_.fill_(scaler_->scale());
    loss_unscale_.fill_(1.0 / scaler_->scale());
  }
  const auto unscaled =
      graph_ ? graphed_gradient(b, step, share) : queue_gradient(b.images, b.labels, step, share);
  flat_->set_rows(static_cast<int64_t>(rows_.size()));
  // Read after backward is queued, so that a GPU is not left idle while the host waits.
  const double value = unscaled.item<double>();
  if (!std::isfinite(value))
    throw diverged_error("loss is " + std::to_string(value) + " at step " + std::to_string(step) +
                         " on replica " + std::to_string(rank_));
  return {value, rows_.size(), std::exchange(data_wait_s_, 0.0)};
}

void replica_engine::apply(const at::Tensor& combined, double lr) {
  {
    torch::NoGradGuard no_grad;
    // With one replica the combined gradient is this replica's own buffer: nothing to copy.
    if (!combined.is_same(flat_->grads()))
      flat_->grads().copy_(combined);
  }
  // Replicas that sum their gradients all see the same sum, so all of them skip, or none.
  const bool finite = !scaler_ || at::isfinite(flat_->parameter_grads()).all().item<bool>();
  const bool at_floor = scaler_ && scaler_->scale() == loss_scaler::smallest;
  if (!scaler_ || scaler_->record(finite)) {
    clip_gradient(flat_->parameter_grads(), training_);
    optimizer_->step(lr);
  } else if (at_floor) {
    throw diverged_error("the gradient is not finite even at the smallest loss scale (2^-24), " +
                         std::to_string(scaler_->skipped_steps()) + " steps skipped, on replica " +
                         std::to_string(rank_));
  }
  flat_->adopt_combined_buffers();
}

void replica_engine::clip_own_gradient() {
  clip_gradient(flat_->parameter_grads(), training_);
}

void replica_engine::set_share(int64_t position, int64_t count) {
  TORCH_CHECK(count > 0 && position >= 0 && position < count, "set_share: position ", position,
              " of ", count);
  position_ = position;
  replicas_ = count;
  rows_ = shard_of(global_batch_, count, position);
  prefetched_ = batch{};  // a batch fetched for the old share
  if (graph_)
    graph_->forget();  // recorded for the old share
  start_loader();
}

void replica_engine::set_weights(const at::Tensor& flat) {
  torch::NoGradGuard no_grad;
  if (!flat.is_same(flat_->weights()))
    flat_->weights().copy_(flat);
  flat_->load_buffers();
}

namespace {

// Under fp16 a checkpoint's optimizer state is the loss scaler's line, then the optimizer's bytes.
constexpr char scaler_tag[] = "loss_scale ";

}  // namespace

std::string replica_engine::optimizer_state() const {
  if (!scaler_)
    return optimizer_->save();
  return scaler_tag + scaler_->save() + "\n" + optimizer_->save();
}

void replica_engine::restore(const at::Tensor& flat, const std::string& optimizer_state) {
  set_weights(flat.to(flat_->weights().device()));
  if (!scaler_)
    return optimizer_->load(optimizer_state);
  const auto end = optimizer_state.find('\n');
  if (optimizer_state.rfind(scaler_tag, 0) != 0 || end == std::string::npos)
    throw std::invalid_argument("the checkpoint holds no loss scale, which an fp16 run needs");
  const auto skip = sizeof(scaler_tag) - 1;
  scaler_->load(optimizer_state.substr(skip, end - skip));
  optimizer_->load(optimizer_state.substr(end + 1));
}

namespace {

// SGD keeps one momentum buffer per parameter, created at its first step.
torch::optim::SGDParamState* momentum_state(torch::optim::Optimizer& optimizer,
                                            const at::Tensor& param) {
  auto* sgd = dynamic_cast<torch::optim::SGD*>(&optimizer);
  TORCH_CHECK(sgd != nullptr, "momentum averaging needs the sgd optimizer");
  return find_optimizer_state<torch::optim::SGDParamState>(*sgd, param);
}

}  // namespace

at::Tensor replica_engine::momenta() const {
  std::vector<at::Tensor> parts;
  for (const auto& p : model_.parameters()) {
    auto* state = momentum_state(optimizer_->optimizer(), p);
    parts.push_back(state != nullptr && state->momentum_buffer().defined()
                        ? state->momentum_buffer().reshape({-1})
                        : at::zeros({p.numel()}, p.options()));
  }
  return at::cat(parts);
}

void replica_engine::set_momenta(const at::Tensor& flat) {
  torch::NoGradGuard no_grad;
  int64_t offset = 0;
  for (const auto& p : model_.parameters()) {
    const int64_t n = p.numel();
    auto* state = momentum_state(optimizer_->optimizer(), p);
    auto slice = flat.narrow(0, offset, n).view(p.sizes());
    if (state != nullptr && state->momentum_buffer().defined())
      state->momentum_buffer().copy_(slice);
    offset += n;
  }
  TORCH_CHECK(offset == flat.numel(), "set_momenta: ", flat.numel(), " values for ", offset,
              " parameters");
}

evaluation_result replica_engine::evaluate() {
  const auto& set = evaluation_set(*data_);
  return evaluate(set, shard_of(set.size(), replicas_, position_));
}

evaluation_result replica_engine::evaluate(const labeled_images& set, row_range rows) {
  torch::NoGradGuard no_grad;
  model_.set_training(false);
  evaluation_result result;
  for (int64_t begin = rows.begin; begin < rows.end; begin += eval_chunk_rows) {
    const int64_t n = std::min(eval_chunk_rows, rows.end - begin);
    auto images = set.images.range(begin, n);
    auto labels = set.labels.narrow(0, begin, n);
    if (transfer_ != nullptr) {
      images = transfer_->upload(images);
      labels = transfer_->upload(labels);
    }
    // Evaluations draw from streams of their own (step -1), should the model draw in eval().
    const auto logits = in_precision(training_.precision, images.device().type(),
                                     [&] { return forward(images, -1, begin); });
    const auto sums = summed_loss(training_.loss, logits, labels);
    if (training_.loss == loss_kind::cross_entropy)
      add_confusion(result.confusion, logits, labels, data_->classes);
    result.loss_sum += sums.loss;
    result.metric_sum += sums.metric;
    result.count += n;
  }
  return result;
}

evaluation_result evaluate_weights(const training_settings& settings, const dataset_ptr& data,
                                   const at::Tensor& weights, const labeled_images& set) {
  replica_engine engine({settings, 0, 1, {0, settings.global_batch}}, data, weights);
  return engine.evaluate(set, {0, set.size()});
}

at::Tensor initial_weights(const training_settings& settings, int64_t classes) {
  // Not while a worker's forward has seeded the same generator for its own draws.
  std::lock_guard<std::mutex> generator(generator_lock());
  at::manual_seed(settings.seed);
  network model(settings.model, classes);
  if (settings.model.init_from_seed)
    model.reinitialize_from_seed(settings.model.path);
  flat_parameters flat(model.named_parameters(), model.named_buffers());
  return flat.weights().clone();
}

}  // namespace troupe
