// Sums tensors in the order given. Float addition is not associative, so the coordinator always
// sums replica gradients in worker order: the result is then independent of arrival order and
// equal run after run.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

namespace troupe {

/// Returns parts[0] + parts[1] + ... evaluated left to right. A single part is returned as is
/// (no copy). The inputs are only read.
at::Tensor sum_in_order(const std::vector<at::Tensor>& parts);

}  // namespace troupe
