#include "actors/workers/held_weights.hpp"

#include "core/collective/compact_encoding.hpp"

#include <ATen/ATen.h>

namespace troupe {

at::Tensor held_weights::hand_out(const caf::actor_addr& worker, const at::Tensor& weights) {
  if (compression_ == compression_kind::none)
    return weights.clone();  // a snapshot: the weights change with the next push
  auto it = held_.find(worker);
  if (it == held_.end()) {
    held_.emplace(worker, weights.clone());
    return weights.clone();
  }
  auto packed = pack(weights - it->second, compression_);
  it->second += unpack(packed).view_as(it->second);
  return packed;
}

}  // namespace troupe
