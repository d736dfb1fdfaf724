// What a parameter server (or one of its shards) sends a worker for its next step: its weights,
// or under parallelism.compression the change from what the worker holds, packed; what packing
// dropped goes out with the next hand-out. The server keeps, by worker, the weights it holds
// (what it was sent, as it decoded them); a worker it has not sent anything yet (a replacement
// too, which is another actor) gets them whole.
#pragma once

#include "core/job/job_config.hpp"

#include <ATen/core/Tensor.h>
#include <caf/actor_addr.hpp>

#include <map>

namespace troupe {

class held_weights {
 public:
  explicit held_weights(compression_kind compression) : compression_(compression) {}
  at::Tensor hand_out(const caf::actor_addr& worker, const at::Tensor& weights);

 private:
  compression_kind compression_;
  std::map<caf::actor_addr, at::Tensor> held_;
};

}  // namespace troupe
