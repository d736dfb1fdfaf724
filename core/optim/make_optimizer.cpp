#include "core/optim/make_optimizer.hpp"

#include "core/io/archive_storages.hpp"
#include "core/io/physical_memory.hpp"
#include "core/optim/optimizer_bytes.hpp"

#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/rmsprop.h>
#include <torch/optim/sgd.h>

#include <torch/serialize/archive.h>

#include <sstream>
#include <stdexcept>

namespace troupe {

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const optimizer_config& config,
                                                        std::vector<at::Tensor> parameters) {
  switch (config.kind) {
    case optimizer_kind::sgd: {
      auto options = torch::optim::SGDOptions(config.lr)
                         .momentum(config.momentum)
                         .weight_decay(config.weight_decay)
                         .nesterov(config.nesterov);
      return std::make_unique<torch::optim::SGD>(std::move(parameters), options);
    }
    case optimizer_kind::adam: {
      auto options = torch::optim::AdamOptions(config.lr)
                         .betas({config.beta1, config.beta2})
                         .eps(config.eps)
                         .weight_decay(config.weight_decay);
      return std::make_unique<torch::optim::Adam>(std::move(parameters), options);
    }
    case optimizer_kind::adamw: {
      auto options = torch::optim::AdamWOptions(config.lr)
                         .betas({config.beta1, config.beta2})
                         .eps(config.eps)
                         .weight_decay(config.weight_decay);
      return std::make_unique<torch::optim::AdamW>(std::move(parameters), options);
    }
    case optimizer_kind::rmsprop: {
      auto options = torch::optim::RMSpropOptions(config.lr)
                         .alpha(config.alpha)
                         .eps(config.eps)
                         .weight_decay(config.weight_decay)
                         .momentum(config.momentum)
                         .centered(config.centered);
      return std::make_unique<torch::optim::RMSprop>(std::move(parameters), options);
    }
  }
  throw std::logic_error("unknown optimizer kind");
}

std::string save_optimizer(const torch::optim::Optimizer& optimizer) {
  return save_optimizer_bytes(optimizer);
}

std::string optimizer_state_problem(const std::string& bytes) {
  return is_optimizer_bytes(bytes) ? optimizer_bytes_problem(bytes)
                                   : script_archive_problem(bytes, physical_memory_bytes());
}

void load_optimizer(torch::optim::Optimizer& optimizer, const std::string& bytes) {
  if (is_optimizer_bytes(bytes)) {
    try {
      load_optimizer_bytes(optimizer, bytes);
    } catch (const std::runtime_error& e) {
      throw std::runtime_error(std::string("optimizer state does not load: ") + e.what());
    }
    return;
  }
  // LibTorch's archive, as checkpoints written before troupe's own format hold it.
  if (const auto problem = script_archive_problem(bytes, physical_memory_bytes()); !problem.empty())
    throw std::runtime_error("optimizer state does not load: " + problem);
  try {
    std::istringstream in(bytes);
    torch::serialize::InputArchive archive;
    archive.load_from(in);
    optimizer.load(archive);
  } catch (const c10::Error& e) {
    throw std::runtime_error(std::string("optimizer state does not load: ") +
                             e.what_without_backtrace());
  }
}

void set_learning_rate(torch::optim::Optimizer& optimizer, double lr) {
  for (auto& group : optimizer.param_groups())
    group.options().set_lr(lr);
}

}  // namespace troupe
