// One shard of async's sharded parameter server (parallelism.ps_shards, core/policy/
// server_shards): its slice of the master weights and an optimizer over the whole parameter
// tensors the slice holds. The optimizers troupe steps (flat_optimizer) act value by value, so
// S shards each stepping their slice with the same gradient and rate do what one server does
// with the whole; a whole server's checkpoint state is cut into shards' states and joined back
// (optimizer_bytes_part, join_optimizer_bytes), so checkpoints do not depend on the shard count.
//
// Gradient clipping by norm needs the whole gradient: under a sharded server the worker clips
// its gradient before it pushes the slices.
//
// Thread safety: none; it belongs to the shard's actor.
#pragma once

#include "core/job/job_config.hpp"
#include "core/model/flat_parameters.hpp"
#include "core/optim/flat_optimizer.hpp"
#include "core/policy/server_shards.hpp"

#include <memory>
#include <string>

namespace troupe {

class shard_engine {
 public:
  /// `layout`: the whole model's flat layout (parameters, then buffers: model_facts's
  /// parameter_layout); `initial`: the whole flat weights the run starts from.
  shard_engine(const optimizer_config& optimizer, const tensor_layout& layout,
               const server_shard& shard, const at::Tensor& initial);
  ~shard_engine();

  /// One optimizer step with this shard's slice of a pushed gradient (`shard().size` values) at
  /// rate `lr`; the slice's buffer values become the weights' (as a whole server keeps those of
  /// the gradient it applied last).
  void apply(const at::Tensor& gradient, double lr);

  /// The slice of the master weights, `shard().size` values.
  const at::Tensor& weights() const { return flat_->weights(); }
  /// This shard's part of the optimizer state (optimizer_bytes_part's format).
  std::string optimizer_state() const { return optimizer_->save(); }
  /// Takes this shard's part of a whole server's state (a checkpoint's): weights, and the
  /// optimizer's unless `optimizer_state` is empty (then the optimizer is left as it is).
  void restore(const at::Tensor& whole, const std::string& optimizer_state);

  const server_shard& shard() const { return shard_; }

 private:
  server_shard shard_;
  std::vector<at::Tensor> parameters_;
  at::Tensor buffer_values_;
  std::unique_ptr<flat_parameters> flat_;
  std::unique_ptr<flat_optimizer> optimizer_;
};

}  // namespace troupe
