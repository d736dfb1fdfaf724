#include "core/io/pickled_tensors.hpp"

#include "core/io/archive_check.hpp"

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/read_adapter_interface.h>
#include <torch/csrc/jit/serialization/unpickler.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>
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

// What follows each opcode pickle_save writes.
enum class operand_kind : uint8_t {
  unknown,  // not an opcode troupe reads: refused
  fixed,    // `bytes` bytes
  counted,  // a little-endian length of `bytes` bytes, then that many
  index,    // a memo index (or frame size) of `bytes` bytes, at most the pickle's size
  lines,    // GLOBAL: two newline-terminated names
  stop,
};
struct operand {
  operand_kind kind = operand_kind::unknown;
  int bytes = 0;
};

const std::array<operand, 256>& operands() {
  static const auto table = [] {
    std::array<operand, 256> t{};
    const auto set = [&t](std::string_view ops, operand o) {
      for (const char op : ops)
        t[static_cast<unsigned char>(op)] = o;
    };
    using k = operand_kind;
    // (Hex escapes end their literal: the next character could read as a hex digit.)
    set("(01QN)t]aels}ubRd", {k::fixed, 0});
    set("\x81\x85\x86\x87\x88\x89\x94", {k::fixed, 0});
    set("Kh\x80", {k::fixed, 1});
    set("M", {k::fixed, 2});
    set("J", {k::fixed, 4});
    set("G", {k::fixed, 8});
    set("CU\x8a\x8c", {k::counted, 1});
    set("XB", {k::counted, 4});
    set("\x8d\x8e", {k::counted, 8});
    set("q", {k::index, 1});
    set("jr", {k::index, 4});
    set("\x95", {k::index, 8});
    set("c", {k::lines, 0});
    set(".", {k::stop, 0});
    return t;
  }();
  return table;
}

// LibTorch's unpickler allocates what a pickle states before it reads: a string of the length an
// opcode announces, a memo table as large as the largest memo index. The opcodes pickle_save
// writes are walked here first; every length must fit in the bytes that follow, every memo index
// in the pickle's own size, and any other opcode is refused.
std::string pickle_problem(std::string_view pickle) {
  size_t at = 0;
  // Reads a little-endian number of `bytes` bytes, or fails at the end.
  const auto number = [&](int bytes, uint64_t& out) {
    if (static_cast<size_t>(bytes) > pickle.size() - at)
      return false;
    out = 0;
    for (int i = bytes - 1; i >= 0; --i)
      out = (out << 8) | static_cast<unsigned char>(pickle[at + static_cast<size_t>(i)]);
    at += static_cast<size_t>(bytes);
    return true;
  };
  const auto skip = [&](uint64_t n) {
    if (n > pickle.size() - at)
      return false;
    at += n;
    return true;
  };
  while (at < pickle.size()) {
    const auto op = static_cast<unsigned char>(pickle[at++]);
    const auto [kind, bytes] = operands()[op];
    uint64_t n = 0;
    bool ok = true;
    switch (kind) {
      case operand_kind::unknown:
        return "the pickle holds an opcode (" + std::to_string(op) + ") troupe does not read";
      case operand_kind::stop:
        return "";
      case operand_kind::fixed:
        ok = skip(static_cast<uint64_t>(bytes));
        break;
      case operand_kind::counted:
        ok = number(bytes, n) && skip(n);
        break;
      case operand_kind::index:
        ok = number(bytes, n) && n <= pickle.size();
        break;
      case operand_kind::lines:
        for (int line = 0; line < 2 && ok; ++line) {
          const auto end = pickle.find('\n', at);
          ok = end != std::string_view::npos && skip(end - at + 1);
        }
        break;
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
  if (const auto problem = pickle_problem({data, pickle_size}); !problem.empty())
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
