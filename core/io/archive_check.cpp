#include "core/io/archive_check.hpp"

#include <cctype>
#include <cstdint>
#include <optional>
#include <set>
#include <stdexcept>

namespace troupe {
namespace {

constexpr uint32_t local_header_sig = 0x04034b50;
constexpr uint32_t central_entry_sig = 0x02014b50;
constexpr uint32_t end_record_sig = 0x06054b50;
constexpr uint32_t zip64_end_record_sig = 0x06064b50;
constexpr uint32_t zip64_locator_sig = 0x07064b50;
constexpr std::size_t end_record_size = 22;
constexpr std::size_t zip64_locator_size = 20;
constexpr std::size_t zip64_end_record_size = 56;
constexpr std::size_t central_entry_size = 46;
constexpr std::size_t local_header_size = 30;
constexpr uint16_t zip64_extra_id = 0x0001;
constexpr uint64_t stored_method = 0;
constexpr uint64_t deflate_method = 8;

// Little-endian reads at `at`; the caller checked the bounds.
uint64_t read_le(std::string_view b, std::size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i)
    v = (v << 8) | static_cast<unsigned char>(b[at + static_cast<std::size_t>(i)]);
  return v;
}

bool fits(std::string_view b, uint64_t at, uint64_t length) {
  return at <= b.size() && length <= b.size() - at;
}

struct directory {
  uint64_t entries = 0;
  uint64_t size = 0;
  uint64_t offset = 0;
};

// The end-of-central-directory record: the last one whose comment reaches the buffer's end.
std::optional<std::size_t> find_end_record(std::string_view b) {
  if (b.size() < end_record_size)
    return std::nullopt;
  const std::size_t last = b.size() - end_record_size;
  const std::size_t first = last > 0xFFFF ? last - 0xFFFF : 0;
  for (std::size_t at = last + 1; at-- > first;)
    if (read_le(b, at, 4) == end_record_sig &&
        at + end_record_size + read_le(b, at + 20, 2) == b.size())
      return at;
  return std::nullopt;
}

// The central directory as the reader will see it: the zip64 record's when there is one (it
// must then agree with every field the plain record does not saturate).
std::string read_directory(std::string_view b, std::size_t end, directory& dir) {
  if (read_le(b, end + 4, 2) != 0 || read_le(b, end + 6, 2) != 0)
    return "spans several disks";
  const auto entries16 = read_le(b, end + 10, 2);
  if (read_le(b, end + 8, 2) != entries16)
    return "its entry counts disagree";
  dir = {entries16, read_le(b, end + 12, 4), read_le(b, end + 16, 4)};
  if (end < zip64_locator_size || read_le(b, end - zip64_locator_size, 4) != zip64_locator_sig)
    return "";
  const auto locator = end - zip64_locator_size;
  const auto record = read_le(b, locator + 8, 8);
  if (!fits(b, record, zip64_end_record_size) || record + zip64_end_record_size > locator ||
      read_le(b, record, 4) != zip64_end_record_sig)
    return "its zip64 locator points outside the archive";
  const directory wide{read_le(b, record + 32, 8), read_le(b, record + 40, 8),
                       read_le(b, record + 48, 8)};
  if (read_le(b, record + 24, 8) != wide.entries || read_le(b, record + 16, 4) != 0 ||
      read_le(b, record + 20, 4) != 0)
    return "its zip64 record spans several disks";
  if ((entries16 != 0xFFFF && entries16 != wide.entries) ||
      (dir.size != 0xFFFFFFFF && dir.size != wide.size) ||
      (dir.offset != 0xFFFFFFFF && dir.offset != wide.offset))
    return "its zip64 record disagrees with its end record";
  dir = wide;
  return "";
}

// One entry's sizes and offset, from its zip64 extra field where the plain ones saturate.
std::string widen(std::string_view b, std::size_t extra, std::size_t extra_length,
                  uint64_t& uncompressed, uint64_t& compressed, uint64_t& offset) {
  std::size_t at = extra;
  const std::size_t end = extra + extra_length;
  while (at + 4 <= end) {
    const auto id = read_le(b, at, 2);
    const auto length = read_le(b, at + 2, 2);
    if (at + 4 + length > end)
      return "an extra field runs past its entry";
    if (id == zip64_extra_id) {
      std::size_t field = at + 4;
      for (auto* value : {&uncompressed, &compressed, &offset}) {
        if (*value != 0xFFFFFFFF)
          continue;
        if (field + 8 > at + 4 + length)
          return "a zip64 field is missing";
        *value = read_le(b, field, 8);
        field += 8;
      }
      return "";
    }
    at += 4 + length;
  }
  if (uncompressed == 0xFFFFFFFF || compressed == 0xFFFFFFFF || offset == 0xFFFFFFFF)
    return "a zip64 field is missing";
  return "";
}

// Central directory entry at `at` (inside the directory) and the local record it points to.
std::string check_entry(std::string_view b, std::size_t at, std::size_t directory_end,
                        const directory& dir, std::size_t& next, archive_entry& entry) {
  if (at + central_entry_size > directory_end || read_le(b, at, 4) != central_entry_sig)
    return "a central directory entry is cut or has no signature";
  const auto method = read_le(b, at + 10, 2);
  uint64_t compressed = read_le(b, at + 20, 4);
  uint64_t uncompressed = read_le(b, at + 24, 4);
  const auto name_length = read_le(b, at + 28, 2);
  const auto extra_length = read_le(b, at + 30, 2);
  const auto comment_length = read_le(b, at + 32, 2);
  uint64_t offset = read_le(b, at + 42, 4);
  next = at + central_entry_size + name_length + extra_length + comment_length;
  if (next > directory_end)
    return "a central directory entry runs past the directory";
  const auto widened = widen(b, at + central_entry_size + name_length, extra_length, uncompressed,
                             compressed, offset);
  if (!widened.empty())
    return widened;
  // PyTorch stores tensors and deflates TorchScript code. The reader allocates what an entry
  // says it inflates to: deflate cannot exceed 1032:1, so a larger claim is forged.
  if (method == stored_method ? compressed != uncompressed
                              : method != deflate_method || uncompressed > 1032 * compressed + 64)
    return "an entry is neither stored nor deflated within deflate's limits";
  if (!fits(b, offset, local_header_size) || offset + local_header_size > dir.offset ||
      read_le(b, offset, 4) != local_header_sig)
    return "an entry's local header lies outside the archive";
  const auto data =
      offset + local_header_size + read_le(b, offset + 26, 2) + read_le(b, offset + 28, 2);
  if (data > dir.offset || compressed > dir.offset - data)
    return "an entry's data runs past the archive's records";
  entry = {std::string(b.substr(at + central_entry_size, name_length)), uncompressed,
           method == deflate_method};
  return "";
}

// Checks the archive; its entries go to `entries` where given.
std::string walk_archive(std::string_view b, std::vector<archive_entry>* entries) {
  const auto end = find_end_record(b);
  if (!end)
    return "not a zip archive (no end-of-central-directory record)";
  directory dir;
  auto problem = read_directory(b, *end, dir);
  if (!problem.empty())
    return "the zip archive " + problem;
  const auto directory_limit =
      *end >= zip64_locator_size && read_le(b, *end - zip64_locator_size, 4) == zip64_locator_sig
          ? read_le(b, *end - zip64_locator_size + 8, 8)
          : static_cast<uint64_t>(*end);
  if (dir.offset > directory_limit || dir.size > directory_limit - dir.offset)
    return "the zip archive's central directory lies outside it";
  if (dir.entries > dir.size / central_entry_size)
    return "the zip archive states more entries than its directory holds";
  const auto directory_end = static_cast<std::size_t>(dir.offset + dir.size);
  std::size_t at = static_cast<std::size_t>(dir.offset);
  // LibTorch's zip reader finds a record by a binary search that ignores case: of two entries
  // whose names differ only in case, which one it reads is not known.
  std::set<std::string> names;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    std::size_t next = 0;
    archive_entry entry;
    problem = check_entry(b, at, directory_end, dir, next, entry);
    if (!problem.empty())
      return "the zip archive's entry " + std::to_string(i) + ": " + problem;
    auto folded = entry.name;
    for (auto& c : folded)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (!names.insert(std::move(folded)).second)
      return "the zip archive holds two entries named " + entry.name;
    if (entries)
      entries->push_back(std::move(entry));
    at = next;
  }
  return "";
}

}  // namespace

std::string archive_problem(std::string_view b) {
  return walk_archive(b, nullptr);
}

std::vector<archive_entry> archive_entries(std::string_view b) {
  std::vector<archive_entry> entries;
  if (const auto problem = walk_archive(b, &entries); !problem.empty())
    throw std::runtime_error(problem);
  return entries;
}

}  // namespace troupe
