#include "core/data/npy_header.hpp"

#include "core/errors.hpp"

#include <fmt/format.h>

#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <string_view>

namespace troupe {
namespace {

constexpr unsigned char magic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
constexpr std::size_t magic_size = sizeof magic;

// One value of the header's dict literal: a string, a bool, or a tuple of whole numbers.
struct literal {
  std::optional<std::string> text;
  std::optional<bool> flag;
  std::optional<std::vector<int64_t>> tuple;
};

// A reader of the few Python literals numpy writes in the header; anything else is an error
// naming the offending position.
class dict_reader {
 public:
  dict_reader(std::string_view text, const std::string& path) : text_(text), path_(path) {}

  std::map<std::string, literal> read_dict() {
    std::map<std::string, literal> out;
    expect('{');
    while (!take('}')) {
      auto key = read_string();
      expect(':');
      out[key] = read_value();
      if (!take(',')) {
        expect('}');
        break;
      }
    }
    return out;
  }

  void finish() {
    skip_space();
    if (pos_ != text_.size())
      fail("text after the dict");
  }

 private:
  // Quotes the header around the fault, not whole: a header may be megabytes long (a 20 MB one
  // made a message of 20 MB).
  [[noreturn]] void fail(const std::string& what) const {
    constexpr std::size_t around = 60;
    const auto from = pos_ > around ? pos_ - around : 0;
    const auto shown = text_.substr(from, 2 * around);
    throw data_error(
        fmt::format("{}: not a .npy header numpy writes: {} at character {} of "
                    "\"{}{}{}\"",
                    path_, what, pos_, from > 0 ? "..." : "", shown,
                    from + shown.size() < text_.size() ? "..." : ""));
  }
  void skip_space() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_])))
      ++pos_;
  }
  bool take(char c) {
    skip_space();
    if (pos_ < text_.size() && text_[pos_] == c)
      return ++pos_, true;
    return false;
  }
  void expect(char c) {
    if (!take(c))
      fail(fmt::format("'{}' expected", c));
  }
  std::string read_string() {
    skip_space();
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"'))
      fail("a quoted string expected");
    const char quote = text_[pos_++];
    const auto end = text_.find(quote, pos_);
    if (end == std::string_view::npos)
      fail("an unterminated string");
    std::string s(text_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return s;
  }
  int64_t read_whole_number() {
    skip_space();
    int64_t value = 0;
    const auto start = pos_;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      const int digit = text_[pos_++] - '0';
      if (value > (std::numeric_limits<int64_t>::max() - digit) / 10)
        fail("a dimension too large");
      value = value * 10 + digit;
    }
    if (pos_ < text_.size() && text_[pos_] == 'L')  // Python 2's long
      ++pos_;
    if (pos_ == start)
      fail("a whole number expected");
    return value;
  }
  literal read_value() {
    skip_space();
    literal v;
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      v.text = read_string();
    } else if (text_.substr(pos_, 4) == "True") {
      v.flag = true, pos_ += 4;
    } else if (text_.substr(pos_, 5) == "False") {
      v.flag = false, pos_ += 5;
    } else if (take('(')) {
      v.tuple.emplace();
      while (!take(')')) {
        v.tuple->push_back(read_whole_number());
        if (!take(',')) {
          expect(')');
          break;
        }
      }
    } else {
      fail("a string, True, False or a tuple expected");
    }
    return v;
  }

  std::string_view text_;
  const std::string& path_;
  std::size_t pos_ = 0;
};

npy_dtype dtype_of(const std::string& path, const std::string& descr) {
  static const std::map<std::string, npy_dtype> known = {
      {"<f4", npy_dtype::float32}, {"<f2", npy_dtype::float16}, {"|u1", npy_dtype::uint8},
      {"<u1", npy_dtype::uint8},   {"<i8", npy_dtype::int64},   {"<i4", npy_dtype::int32},
      {"<f8", npy_dtype::float64}};
  const auto it = known.find(descr);
  if (it != known.end())
    return it->second;
  const bool big_endian = !descr.empty() && descr[0] == '>';
  throw data_error(fmt::format(
      "{}: holds dtype '{}'{}; troupe reads float32, float16 and uint8 inputs, int64 and int32 "
      "labels, float32 and float64 targets (little-endian)",
      path, descr.size() <= 40 ? descr : descr.substr(0, 40) + "...",
      big_endian ? " (big-endian: write it with arr.astype(arr.dtype.newbyteorder('<')))" : ""));
}

std::size_t checked_product(const std::string& path, const std::vector<int64_t>& dims,
                            std::size_t start, std::size_t element) {
  std::size_t product = element;
  for (std::size_t i = start; i < dims.size(); ++i) {
    const auto d = static_cast<std::size_t>(dims[i]);
    if (d != 0 && product > std::numeric_limits<std::size_t>::max() / d)
      throw data_error(
          fmt::format("{}: its header declares shape ({}), more bytes than any "
                      "file holds",
                      path, fmt::join(dims, ", ")));
    product *= d;
  }
  return product;
}

uint32_t little_endian(const unsigned char* p, std::size_t bytes) {
  uint32_t value = 0;
  for (std::size_t i = bytes; i-- > 0;)
    value = value << 8 | p[i];
  return value;
}

}  // namespace

const char* to_string(npy_dtype dtype) {
  switch (dtype) {
    case npy_dtype::float32:
      return "float32";
    case npy_dtype::float16:
      return "float16";
    case npy_dtype::uint8:
      return "uint8";
    case npy_dtype::int64:
      return "int64";
    case npy_dtype::int32:
      return "int32";
    case npy_dtype::float64:
      return "float64";
  }
  return "?";
}

std::size_t element_size(npy_dtype dtype) {
  switch (dtype) {
    case npy_dtype::uint8:
      return 1;
    case npy_dtype::float16:
      return 2;
    case npy_dtype::float32:
    case npy_dtype::int32:
      return 4;
    case npy_dtype::int64:
    case npy_dtype::float64:
      return 8;
  }
  return 1;
}

npy_header parse_npy_header(const std::string& path, const unsigned char* bytes, std::size_t size) {
  if (size < magic_size + 4 || std::memcmp(bytes, magic, magic_size) != 0)
    throw data_error(path +
                     ": not a .npy file (it does not start with \"\\x93NUMPY\"); write "
                     "it with numpy.save");
  const int major = bytes[magic_size];
  if (major < 1 || major > 3)
    throw data_error(fmt::format("{}: .npy format version {}.{}; troupe reads 1.0 to 3.0", path,
                                 major, bytes[magic_size + 1]));
  const std::size_t length_bytes = major == 1 ? 2 : 4;
  const std::size_t prefix = magic_size + 2 + length_bytes;
  if (size < prefix)
    throw data_error(path + ": truncated inside its header");
  const std::size_t header_length = little_endian(bytes + magic_size + 2, length_bytes);
  if (header_length > size - prefix)
    throw data_error(
        fmt::format("{}: truncated inside its header ({} bytes declared, {} in "
                    "the file)",
                    path, header_length, size - prefix));
  const std::string_view text(reinterpret_cast<const char*>(bytes + prefix), header_length);
  dict_reader reader(text, path);
  const auto dict = reader.read_dict();
  reader.finish();

  const auto field = [&](const char* key) -> const literal& {
    const auto it = dict.find(key);
    if (it == dict.end())
      throw data_error(fmt::format("{}: its header has no '{}'", path, key));
    return it->second;
  };
  const auto& descr = field("descr");
  const auto& fortran = field("fortran_order");
  const auto& shape = field("shape");
  if (!descr.text || !fortran.flag || !shape.tuple)
    throw data_error(path + ": its header's descr, fortran_order or shape has the wrong type");
  if (*fortran.flag)
    throw data_error(path +
                     ": holds a Fortran-order array; save it C-ordered "
                     "(numpy.save(path, numpy.ascontiguousarray(arr)))");

  npy_header header;
  header.dtype = dtype_of(path, *descr.text);
  header.shape = *shape.tuple;
  header.data_offset = prefix + header_length;
  if (header.shape.empty())
    throw data_error(path + ": holds a single value (shape ()); it must be an array of rows");
  if (header.shape[0] == 0)
    throw data_error(path + ": has 0 rows");
  header.row_bytes = checked_product(path, header.shape, 1, element_size(header.dtype));
  header.data_bytes = checked_product(path, header.shape, 0, element_size(header.dtype));
  if (header.row_bytes == 0)
    throw data_error(fmt::format("{}: its rows hold no values (shape ({}))", path,
                                 fmt::join(header.shape, ", ")));
  const auto have = size - header.data_offset;
  if (have < header.data_bytes)
    throw data_error(fmt::format(
        "{}: truncated: its header declares {} ({}), {} bytes, and the file holds {} after "
        "the header",
        path, to_string(header.dtype), fmt::join(header.shape, ", "), header.data_bytes, have));
  if (have > header.data_bytes)
    throw data_error(fmt::format(
        "{}: holds {} bytes after its header, which declares {} ({}) of {} bytes: the header "
        "does not describe the file",
        path, have, to_string(header.dtype), fmt::join(header.shape, ", "), header.data_bytes));
  return header;
}

}  // namespace troupe
