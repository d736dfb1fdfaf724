// async's sharded parameter server (parallelism.ps_shards): which part of the flat weights each
// shard holds. A shard is a run of whole parameter tensors in the model's order (so each shard's
// optimizer keeps whole tensors' state), the runs as even in values as the tensors allow; the
// buffers' values (BatchNorm's running statistics), which ride behind the parameters in the flat
// weights, go with the last shard.
//
// Pure: no tensors, no actors.
#pragma once

#include <cstdint>
#include <vector>

namespace troupe {

struct server_shard {
  int64_t begin = 0;             ///< first value in the flat weights
  int64_t size = 0;              ///< values: its parameters', then (the last shard) the buffers'
  int64_t first_parameter = 0;   ///< its first parameter tensor, in model order
  int64_t parameters = 0;        ///< parameter tensors it holds
  int64_t parameter_values = 0;  ///< of `size`, the parameters' (the rest are buffer values)
};

/// Splits parameters of `parameter_sizes` values each (model order) and `buffer_values` behind
/// them into `shards` shards. Each boundary falls at the tensor boundary nearest to an even
/// split, every shard holding at least one tensor. Throws std::invalid_argument for fewer than
/// one shard or more shards than parameter tensors.
std::vector<server_shard> split_server(const std::vector<int64_t>& parameter_sizes,
                                       int64_t buffer_values, int64_t shards);

}  // namespace troupe
