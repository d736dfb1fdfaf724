// async with a sharded parameter server (core/policy/server_shards): a worker's weights arrive
// as one slice from each shard, in any order, each tagged with the version the driver handed
// out. This keeps count of which slices of the version being gathered are in, and says which
// arrivals to drop: a slice of a version already complete or overtaken (a hand-out sent again
// to a shard that replaced a lost one), or a second slice from one shard.
//
// A worker copies each slice it takes into its weights at once; the version is complete, and
// the step can start, when every shard's slice is in.
//
// Pure; thread safety: none (owned by the worker).
#pragma once

#include <cstdint>
#include <vector>

namespace troupe {

class slice_gather {
 public:
  explicit slice_gather(int64_t shards);

  enum class verdict {
    take,           ///< copy it in; more slices of this version are to come
    take_complete,  ///< copy it in; the version is now complete
    drop,           ///< ignore it
  };
  /// Throws std::invalid_argument for a shard outside [0, shards).
  verdict on_slice(int64_t version, int64_t shard);

  /// The last version completed, -1 before any.
  int64_t completed() const { return completed_; }

 private:
  std::vector<bool> have_;
  int64_t gathering_ = -1;  ///< the version being gathered, -1 for none
  int64_t completed_ = -1;
};

}  // namespace troupe
