#include "core/io/weights_file.hpp"

#include "core/io/atomic_file.hpp"
#include "core/io/pickled_tensors.hpp"
#include "core/io/whole_file.hpp"

#include <ATen/core/Dict.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <stdexcept>

namespace troupe {

// What torch::jit::pickle_save writes (the zip archive torch.save writes: data.pkl, and each
// tensor's bytes as data/K), but with the dict untagged: pickle_save wraps it in
// torch.jit._pickle.restore_type_tag, a function torch.load's weights_only mode (PyTorch's
// default from 2.6) refuses to call, so that a plain torch.load(path) failed there.
std::vector<char> weights_archive(const c10::Dict<std::string, at::Tensor>& dict) {
  std::vector<char> pickled;
  torch::jit::Pickler pickler(
      [&pickled](const char* bytes, size_t n) { pickled.insert(pickled.end(), bytes, bytes + n); },
      nullptr, nullptr, nullptr, nullptr, /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(dict);
  pickler.stop();
  std::vector<char> archive;
  caffe2::serialize::PyTorchStreamWriter writer([&archive](const void* data, size_t n) {
    const auto* bytes = static_cast<const char*>(data);
    archive.insert(archive.end(), bytes, bytes + n);
    return n;
  });
  // Each storage whole, as the pickle refers to it (the tensors are on the host: see below).
  const auto& tensors = pickler.tensorData();
  for (std::size_t k = 0; k < tensors.size(); ++k) {
    const auto& storage = tensors[k].storage();
    writer.writeRecord("data/" + std::to_string(k), storage.data_ptr().get(), storage.nbytes());
  }
  writer.writeRecord("data.pkl", pickled.data(), pickled.size());
  writer.writeEndOfFile();
  return archive;
}

void save_weights(const std::string& path,
                  const std::vector<std::pair<std::string, at::Tensor>>& named) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [name, tensor] : named)
    dict.insert(name, tensor.to(at::kCPU).contiguous());
  const auto bytes = weights_archive(dict);
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
