#include "core/io/pickled_tensors.hpp"

#include "core/io/archive_check.hpp"
#include "core/io/archive_storages.hpp"
#include "core/io/buffer_reader.hpp"
#include "core/io/physical_memory.hpp"

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>
#include <tuple>

namespace troupe {
namespace {

// The unpickling of pickle_load ("data.pkl", tensors in "data/KEY"), with the size of every
// record handed to a storage kept by its address.
c10::IValue unpickle(std::string_view bytes, std::map<const void*, size_t>& record_sizes) {
  caffe2::serialize::PyTorchStreamReader archive(std::make_shared<buffer_reader>(bytes));
  // Not a structured binding: C++17 lambdas cannot capture one.
  at::DataPtr pickle;
  size_t pickle_size = 0;
  std::tie(pickle, pickle_size) = archive.getRecord("data.pkl");
  const auto* data = static_cast<const char*>(pickle.get());
  size_t done = 0;
  auto reader = [&](char* buffer, size_t length) -> size_t {
    const auto n = std::min(length, pickle_size - done);
    std::memcpy(buffer, data + done, n);
    done += n;
    return n;
  };
  auto read_record = [&](const std::string& key) {
    auto [record, size] = archive.getRecord("data/" + key);
    record_sizes[record.get()] = size;
    return std::move(record);
  };
  torch::jit::Unpickler unpickler(reader, nullptr, nullptr, read_record, c10::nullopt);
  unpickler.set_version(archive.version());
  return unpickler.parse_ivalue();
}

// The tensor reads only bytes of the record its storage holds.
bool within_record(const at::Tensor& t, const std::map<const void*, size_t>& record_sizes) {
  if (!t.has_storage() || t.storage_offset() < 0)
    return false;
  if (t.numel() == 0)
    return true;  // reads nothing: LibTorch read no record for it
  const auto record = record_sizes.find(t.storage().data());
  if (record == record_sizes.end() || t.storage().nbytes() > record->second)
    return false;
  uint64_t last = static_cast<uint64_t>(t.storage_offset());  // furthest element it reaches
  for (int64_t d = 0; d < t.dim(); ++d) {
    if (t.size(d) == 0)
      return true;
    if (t.stride(d) < 0)
      return false;
    last += static_cast<uint64_t>(t.size(d) - 1) * static_cast<uint64_t>(t.stride(d));
  }
  const auto element = static_cast<uint64_t>(t.element_size());
  return last < t.storage().nbytes() / element;
}

// What LibTorch's reader says of two common files, in words that say what to do.
std::string in_words(const std::string& message) {
  // It reads collections.OrderedDict (what model.state_dict() is, the thing most saved) as None,
  // then asserts on it: "... please report a bug to PyTorch" helps no one.
  if (message.find("Expected GenericDict") != std::string::npos)
    return "holds a dictionary LibTorch cannot read (an OrderedDict, as model.state_dict() "
           "returns?): save a plain dict, torch.save(dict(model.state_dict()), path)";
  // Python pickles a dictionary of one entry with SETITEM, an opcode the reader lacks.
  if (message.find("opcode for unpickling at 0x73") != std::string::npos)
    return "holds a dictionary of one entry, which Python pickles in a way LibTorch cannot "
           "read (SETITEM): save two entries or more";
  return message;
}

}  // namespace

c10::Dict<std::string, at::Tensor> read_pickled_tensors(std::string_view bytes,
                                                        const std::string& what) {
  if (auto problem = archive_problem(bytes); !problem.empty())
    throw std::runtime_error(what + ": " + problem);
  if (auto problem = archive_tensors_problem(bytes, "data", physical_memory_bytes());
      !problem.empty())
    throw std::runtime_error(what + ": " + problem);
  std::map<const void*, size_t> record_sizes;
  c10::IValue value;
  try {
    value = unpickle(bytes, record_sizes);
  } catch (const c10::Error& e) {
    throw std::runtime_error(what + ": " + in_words(e.what_without_backtrace()));
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(what + ": " + in_words(e.what()));
  }
  if (!value.isGenericDict())
    throw std::runtime_error(what + " holds no dictionary");
  c10::Dict<std::string, at::Tensor> out;
  for (const auto& entry : value.toGenericDict()) {
    if (!entry.key().isString() || !entry.value().isTensor())
      throw std::runtime_error(what + " holds something else than named tensors");
    const auto& t = entry.value().toTensor();
    if (!within_record(t, record_sizes))
      throw std::runtime_error(what + ": tensor " + entry.key().toStringRef() +
                               " reaches past the bytes stored for it");
    out.insert(entry.key().toStringRef(), t);
  }
  return out;
}

}  // namespace troupe
