// Sums (or weighted-sums) tensors in the order given. Float addition is not associative, so the
// run driver always sums replica gradients in worker order: the result is then independent of
// arrival order and equal run after run.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace troupe {

/// Returns parts[0] + parts[1] + ... evaluated left to right. A single part is returned as is
/// (no copy). The inputs are only read.
at::Tensor sum_in_order(const std::vector<at::Tensor>& parts);

/// Returns weights[0] * parts[0] + weights[1] * parts[1] + ..., left to right (the average of
/// replicas' weights by their share of the batch). A single part with weight 1 is returned as
/// is.
at::Tensor weighted_sum_in_order(const std::vector<at::Tensor>& parts,
                                 const std::vector<double>& weights);

}  // namespace troupe
