#include "core/ensemble/ensemble_members.hpp"

#include "core/model/flat_parameters.hpp"
#include "core/model/model_builder.hpp"
#include "core/model/network.hpp"
#include "core/model/random_draws.hpp"

#include <ATen/ATen.h>

#include <mutex>

namespace troupe {

torch::nn::Sequential member_layers(const model_config& model, int64_t classes) {
  if (model.kind != model_kind::torchscript)
    return build_model(model, classes);
  return network(model, classes).stackable_layers(model.path);
}

at::Tensor member_initial_weights(const training_settings& settings, int64_t k, int64_t classes) {
  // Not while a worker's forward has seeded the same generator for its own draws.
  std::lock_guard<std::mutex> generator(generator_lock());
  at::manual_seed(settings.seed + static_cast<uint64_t>(k));
  auto layers = member_layers(settings.model, classes);
  return flat_parameters(*layers).weights().clone();
}

job_config member_job(const job_config& job, int64_t k) {
  auto alone = job;
  alone.ensemble = {};
  if (job.ensemble.distinct_data_order)
    alone.seed = job.seed + static_cast<uint64_t>(k);
  if (!job.ensemble.lrs.empty())
    alone.optimizer.lr = job.ensemble.lrs[static_cast<std::size_t>(k)];
  return alone;
}

}  // namespace troupe
