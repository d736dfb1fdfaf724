// The optimizer of a model whose parameters live in flat buffers (core/model/flat_parameters):
// LibTorch's, as the job configures it (make_optimizer), stepped in one pass over the buffers by
// flat_sgd, flat_adam, flat_adamw or flat_rmsprop. Whole replicas and pipeline stages both step
// through it, so that they do the same arithmetic: a model cut into stages trains as the whole one
// does.
//
// Thread safety: none; it belongs to the engine that owns the model.
#pragma once

#include "core/job/job_config.hpp"
#include "core/model/flat_parameters.hpp"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <vector>

namespace troupe {

template <class Optimizer>
class basic_flat_adam;
class flat_sgd;
class flat_rmsprop;

class flat_optimizer {
 public:
  /// Over `parameters`, the module's, whose values and gradients are `flat`'s (which must
  /// outlive this object).
  flat_optimizer(const optimizer_config& config, const flat_parameters& flat,
                 std::vector<at::Tensor> parameters);
  ~flat_optimizer();

  /// One step with learning rate `lr` on the gradient `flat` holds.
  void step(double lr);

  /// The state as bytes, and back (make_optimizer's save_optimizer / load_optimizer).
  std::string save() const;
  void load(const std::string& bytes);

  const torch::optim::Optimizer& optimizer() const { return *optimizer_; }
  /// For writing into the state in place (momentum averaging); not for replacing it.
  torch::optim::Optimizer& optimizer() { return *optimizer_; }

 private:
  /// After the optimizer's state was replaced: the fused step's buffers take it over.
  void adopt_state();

  const flat_parameters& flat_;
  std::unique_ptr<torch::optim::Optimizer> optimizer_;
  std::unique_ptr<flat_sgd> sgd_;                              ///< steps optimizer_ when it is SGD
  std::unique_ptr<basic_flat_adam<torch::optim::Adam>> adam_;  ///< when it is Adam
  std::unique_ptr<basic_flat_adam<torch::optim::AdamW>> adamw_;  ///< when it is AdamW
  std::unique_ptr<flat_rmsprop> rmsprop_;                        ///< when it is RMSprop
};

}  // namespace troupe
