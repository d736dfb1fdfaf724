#include "core/io/pickle_opcodes.hpp"

#include <map>

namespace troupe {

const std::array<pickle_operand, 256>& pickle_operands() {
  static const auto table = [] {
    std::array<pickle_operand, 256> t{};
    const auto set = [&t](std::string_view ops, pickle_operand o) {
      for (const char op : ops)
        t[static_cast<unsigned char>(op)] = o;
    };
    using k = pickle_operand_kind;
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

uint64_t storage_element_bytes(std::string_view type) {
  static const std::map<std::string_view, uint64_t> sizes = {
      {"DoubleStorage", 8},   {"FloatStorage", 4},        {"HalfStorage", 2},
      {"BFloat16Storage", 2}, {"LongStorage", 8},         {"IntStorage", 4},
      {"ShortStorage", 2},    {"CharStorage", 1},         {"ByteStorage", 1},
      {"BoolStorage", 1},     {"ComplexFloatStorage", 8}, {"ComplexDoubleStorage", 16},
      {"QInt8Storage", 1},    {"QUInt8Storage", 1},       {"QInt32Storage", 4},
      {"UntypedStorage", 1}};
  const auto found = sizes.find(type);
  return found == sizes.end() ? 0 : found->second;
}

}  // namespace troupe
