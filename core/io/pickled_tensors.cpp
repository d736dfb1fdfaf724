#include "core/io/pickled_tensors.hpp"

#include "core/io/archive_check.hpp"

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <tuple>

namespace troupe {
namespace {

// Reads inside the buffer only: a read past its end returns what there is.
class buffer_reader final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit buffer_reader(std::string_view bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char*) const override {
    if (pos >= bytes_.size())
      return 0;
    n = std::min<uint64_t>(n, bytes_.size() - pos);
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

 private:
  std::string_view bytes_;
};

// LibTorch's unpickler allocates what a pickle states before it reads: a string of the length an
// opcode announces, a memo table as large as the largest memo index. The opcodes pickle_save
// writes are walked here first; every length must fit in the bytes that follow, every memo index
// in the pickle's own size, and any other opcode is refused.
std::string pickle_problem(const char* data, size_t size) {
  size_t at = 0;
  const auto take = [&](size_t n) {
    if (n > size - at)
      return false;
    at += n;
    return true;
  };
  const auto length = [&](int bytes, uint64_t& out) {
    if (static_cast<size_t>(bytes) > size - at)
      return false;
    out = 0;
    for (int i = bytes - 1; i >= 0; --i)
      out = (out << 8) | static_cast<unsigned char>(data[at + static_cast<size_t>(i)]);
    at += static_cast<size_t>(bytes);
    return true;
  };
  while (at < size) {
    const auto op = static_cast<unsigned char>(data[at++]);
    uint64_t n = 0;
    bool ok = true;
    switch (op) {
      case '(':
      case '0':
      case '1':
      case 'Q':
      case 'N':
      case ')':
      case 't':
      case 0x85:
      case 0x86:
      case 0x87:
      case ']':
      case 'a':
      case 'e':
      case 'l':
      case '}':
      case 's':
      case 'u':
      case 0x88:
      case 0x89:
      case 'b':
      case 'R':
      case 0x81:
      case 'd':
      case 0x94:
        break;
      case '.':
        return "";
      case 'K':
      case 'h':
      case 0x80:
        ok = take(1);
        break;
      case 'M':
        ok = take(2);
        break;
      case 'J':
        ok = take(4);
        break;
      case 'G':
        ok = take(8);
        break;
      case 'q':
      case 'j':
      case 'r':
        ok = length(op == 'q' ? 1 : 4, n) && n <= size;
        break;
      case 0x8a:
      case 'C':
      case 'U':
      case 0x8c:
        ok = length(1, n) && take(n);
        break;
      case 'X':
      case 'B':
        ok = length(4, n) && take(n);
        break;
      case 0x8d:
      case 0x8e:
      case 0x95:
        ok = length(8, n) && (op == 0x95 || take(n));
        break;
      case 'c':
        for (int line = 0; line < 2 && ok; ++line) {
          const auto* end = static_cast<const char*>(std::memchr(data + at, '\n', size - at));
          ok = end != nullptr && take(static_cast<size_t>(end - (data + at)) + 1);
        }
        break;
      default:
        return "the pickle holds an opcode (" + std::to_string(op) + ") troupe does not read";
    }
    if (!ok)
      return "the pickle announces more than it holds";
  }
  return "the pickle has no end";
}

// The unpickling of pickle_load ("data.pkl", tensors in "data/KEY"), with the size of every
// record handed to a storage kept by its address.
c10::IValue unpickle(std::string_view bytes, std::map<const void*, size_t>& record_sizes) {
  caffe2::serialize::PyTorchStreamReader archive(std::make_shared<buffer_reader>(bytes));
  // Not a structured binding: C++17 lambdas cannot capture one.
  at::DataPtr pickle;
  size_t pickle_size = 0;
  std::tie(pickle, pickle_size) = archive.getRecord("data.pkl");
  const auto* data = static_cast<const char*>(pickle.get());
  if (const auto problem = pickle_problem(data, pickle_size); !problem.empty())
    throw std::runtime_error(problem);
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

}  // namespace

c10::Dict<std::string, at::Tensor> read_pickled_tensors(std::string_view bytes,
                                                        const std::string& what) {
  if (const auto problem = archive_problem(bytes); !problem.empty())
    throw std::runtime_error(what + ": " + problem);
  std::map<const void*, size_t> record_sizes;
  c10::IValue value;
  try {
    value = unpickle(bytes, record_sizes);
  } catch (const c10::Error& e) {
    throw std::runtime_error(what + ": " + e.what_without_backtrace());
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(what + ": " + e.what());
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
