#include "core/collective/sum_in_order.hpp"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>

namespace troupe {

at::Tensor sum_in_order(const std::vector<at::Tensor>& parts) {
  TORCH_CHECK(!parts.empty(), "sum_in_order: nothing to sum");
  if (parts.size() == 1)
    return parts.front();
  auto total = parts[0] + parts[1];
  for (std::size_t i = 2; i < parts.size(); ++i)
    total.add_(parts[i]);
  return total;
}

at::Tensor weighted_sum_in_order(const std::vector<at::Tensor>& parts,
                                 const std::vector<double>& weights) {
  TORCH_CHECK(!parts.empty() && parts.size() == weights.size(),
              "weighted_sum_in_order: ", parts.size(), " parts, ", weights.size(), " weights");
  if (parts.size() == 1 && weights[0] == 1.0)
    return parts.front();
  auto total = parts[0] * weights[0];
  for (std::size_t i = 1; i < parts.size(); ++i)
    total.add_(parts[i], weights[i]);
  return total;
}

}  // namespace troupe
