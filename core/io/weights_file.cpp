#include "core/io/weights_file.hpp"

#include "core/io/archive_check.hpp"
#include "core/io/atomic_file.hpp"

#include <ATen/core/Dict.h>
#include <torch/csrc/jit/serialization/pickle.h>

#include <fstream>
#include <iterator>
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
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::runtime_error(path + ": cannot open");
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (const auto problem = archive_problem(std::string_view(bytes.data(), bytes.size()));
      !problem.empty())
    throw std::runtime_error(path + ": " + problem);
  auto value = torch::jit::pickle_load(bytes);
  std::vector<std::pair<std::string, at::Tensor>> out;
  for (const auto& entry : value.toGenericDict())
    out.emplace_back(entry.key().toStringRef(), entry.value().toTensor());
  return out;
}

}  // namespace troupe
