#include "core/policy/server_shards.hpp"

#include <cstdlib>
#include <stdexcept>
#include <string>

namespace troupe {

std::vector<server_shard> split_server(const std::vector<int64_t>& parameter_sizes,
                                       int64_t buffer_values, int64_t shards) {
  const auto tensors = static_cast<int64_t>(parameter_sizes.size());
  if (shards < 1 || shards > tensors)
    throw std::invalid_argument("a parameter server of " + std::to_string(shards) +
                                " shard(s) over a model of " + std::to_string(tensors) +
                                " parameter tensors: each shard holds at least one tensor");
  // prefix[i]: values before tensor i.
  std::vector<int64_t> prefix(static_cast<std::size_t>(tensors) + 1, 0);
  for (int64_t i = 0; i < tensors; ++i)
    prefix[i + 1] = prefix[i] + parameter_sizes[static_cast<std::size_t>(i)];
  const int64_t total = prefix.back();
  std::vector<int64_t> bounds{0};  // tensor indices where shards begin, then `tensors`
  for (int64_t k = 1; k < shards; ++k) {
    const double target =
        static_cast<double>(total) * static_cast<double>(k) / static_cast<double>(shards);
    // After the last boundary, leaving a tensor for each shard still to come.
    const int64_t lowest = bounds.back() + 1;
    const int64_t highest = tensors - (shards - k);
    int64_t best = lowest;
    for (int64_t b = lowest; b <= highest; ++b)
      if (std::abs(static_cast<double>(prefix[b]) - target) <
          std::abs(static_cast<double>(prefix[best]) - target))
        best = b;
    bounds.push_back(best);
  }
  bounds.push_back(tensors);
  std::vector<server_shard> out;
  for (int64_t k = 0; k < shards; ++k) {
    server_shard s;
    s.first_parameter = bounds[k];
    s.parameters = bounds[k + 1] - bounds[k];
    s.begin = prefix[bounds[k]];
    s.parameter_values = prefix[bounds[k + 1]] - s.begin;
    s.size = s.parameter_values + (k + 1 == shards ? buffer_values : 0);
    out.push_back(s);
  }
  return out;
}

}  // namespace troupe
