#include "core/optim/flat_optimizer.hpp"

#include "core/optim/flat_adam.hpp"
#include "core/optim/flat_rmsprop.hpp"
#include "core/optim/flat_sgd.hpp"
#include "core/optim/make_optimizer.hpp"

#include <stdexcept>
#include <utility>

namespace troupe {

flat_optimizer::flat_optimizer(const optimizer_config& config, const flat_parameters& flat,
                               std::vector<at::Tensor> parameters)
    : flat_(flat), optimizer_(make_optimizer(config, parameters)) {
  if (auto* sgd = dynamic_cast<torch::optim::SGD*>(optimizer_.get()))
    sgd_ = std::make_unique<flat_sgd>(*sgd, std::move(parameters));
  else if (auto* adam = dynamic_cast<torch::optim::Adam*>(optimizer_.get()))
    adam_ = std::make_unique<flat_adam>(*adam, std::move(parameters));
  else if (auto* adamw = dynamic_cast<torch::optim::AdamW*>(optimizer_.get()))
    adamw_ = std::make_unique<flat_adamw>(*adamw, std::move(parameters));
  else if (auto* rmsprop = dynamic_cast<torch::optim::RMSprop*>(optimizer_.get()))
    rmsprop_ = std::make_unique<flat_rmsprop>(*rmsprop, std::move(parameters));
}

flat_optimizer::~flat_optimizer() = default;

void flat_optimizer::step(double lr) {
  const auto weights = flat_.weights().narrow(0, 0, flat_.parameter_count());
  if (sgd_) {
    sgd_->step(weights, flat_.parameter_grads(), lr);
  } else if (adam_) {
    adam_->step(weights, flat_.parameter_grads(), lr);
  } else if (adamw_) {
    adamw_->step(weights, flat_.parameter_grads(), lr);
  } else if (rmsprop_) {
    rmsprop_->step(weights, flat_.parameter_grads(), lr);
  } else {  // LibTorch's own step reads the rate from its options
    set_learning_rate(*optimizer_, lr);
    optimizer_->step();
  }
}

std::string flat_optimizer::save() const {
  return save_optimizer(*optimizer_);
}

void flat_optimizer::load(const std::string& bytes) {
  // The loaded state's tensors are the optimizer's own: into the fused step's flat buffers, after
  // a load that failed too (it may have replaced some).
  try {
    load_optimizer(*optimizer_, bytes);
  } catch (...) {
    try {
      adopt_state();
    } catch (const std::runtime_error&) {  // the load's own error is the one to report
    }
    throw;
  }
  adopt_state();
}

void flat_optimizer::adopt_state() {
  if (sgd_)
    sgd_->adopt_state();
  if (adam_)
    adam_->adopt_state();
  if (adamw_)
    adamw_->adopt_state();
  if (rmsprop_)
    rmsprop_->adopt_state();
}

}  // namespace troupe
