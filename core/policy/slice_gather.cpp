#include "core/policy/slice_gather.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace troupe {

slice_gather::slice_gather(int64_t shards) : have_(static_cast<std::size_t>(shards), false) {
  if (shards < 1)
    throw std::invalid_argument("slice_gather: at least one shard");
}

slice_gather::verdict slice_gather::on_slice(int64_t version, int64_t shard) {
  if (shard < 0 || shard >= static_cast<int64_t>(have_.size()))
    throw std::invalid_argument("a weights slice from shard " + std::to_string(shard) +
                                " of a server of " + std::to_string(have_.size()));
  if (version <= completed_ || version < gathering_)
    return verdict::drop;
  if (version > gathering_) {  // a newer hand-out: what came of an older one is overtaken
    gathering_ = version;
    std::fill(have_.begin(), have_.end(), false);
  }
  if (have_[static_cast<std::size_t>(shard)])
    return verdict::drop;
  have_[static_cast<std::size_t>(shard)] = true;
  if (std::find(have_.begin(), have_.end(), false) != have_.end())
    return verdict::take;
  completed_ = version;
  gathering_ = -1;
  return verdict::take_complete;
}

}  // namespace troupe
