// Saves named tensors as a file that Python's torch.load reads directly into a
// {name: tensor} dict (LibTorch's pickle format of a c10::Dict<std::string, at::Tensor>, the
// dict untagged so that torch.load's weights_only mode reads it too), written atomically.
#pragma once

#include <ATen/core/Dict.h>
#include <ATen/core/Tensor.h>

#include <string>
#include <utility>
#include <vector>

namespace troupe {

void save_weights(const std::string& path,
                  const std::vector<std::pair<std::string, at::Tensor>>& named);

/// The bytes save_weights writes for `dict` (of tensors on the host): a torch.save archive.
std::vector<char> weights_archive(const c10::Dict<std::string, at::Tensor>& dict);

/// Reads a file written by save_weights back (for tests and tools), in name order.
std::vector<std::pair<std::string, at::Tensor>> load_weights(const std::string& path);

}  // namespace troupe
