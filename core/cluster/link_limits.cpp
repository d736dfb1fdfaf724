#include "core/cluster/link_limits.hpp"

#include <algorithm>
#include <cmath>

namespace troupe {

uint64_t largest_message_bytes(int64_t parameters, double bucket_mb, std::size_t plan_json_bytes) {
  const uint64_t weights = 3 * 4 * static_cast<uint64_t>(std::max<int64_t>(0, parameters));
  const auto bucket = static_cast<uint64_t>(std::ceil(std::max(0.0, bucket_mb) * (1 << 20)));
  return std::max(weights, bucket) + plan_json_bytes + (uint64_t{1} << 20);
}

}  // namespace troupe
