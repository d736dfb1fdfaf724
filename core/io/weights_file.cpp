#include "core/io/weights_file.hpp"

#include "core/io/atomic_file.hpp"
#include "core/io/pickled_tensors.hpp"
#include "core/io/whole_file.hpp"

#include <ATen/core/Dict.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <stdexcept>

namespace troupe {

void save_weights(const std::string& path,
                  const std::vector<std::pair<std::string, at::Tensor>>& named) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : named)
    dict.insert(name, tensor.contiguous());
  const std::vector<char> bytes = torch::jit::pickle_save(dict);
  write_file_atomically(path, std::string_view(bytes.data(), bytes.size()));
}

std::vector<std::pair<std::string, at::Tensor>> load_weights(const std::string& path) {
  const auto bytes = read_whole_file(path);
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& entry : read_pickled_tensors(bytes, path))
    out.emplace_back(entry.key(), entry.value());
  return out;
}

}  // namespace troupe
