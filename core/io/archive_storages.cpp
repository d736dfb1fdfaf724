#include "core/io/archive_storages.hpp"

#include "core/io/buffer_reader.hpp"
#include "core/io/pickle_walk.hpp"

#include <c10/util/Exception.h>
#include <caffe2/serialize/inline_container.h>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <memory>

namespace troupe {
namespace {

bool same_ignoring_case(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

std::string bytes_text(double bytes) {
  return fmt::format("{:.0f} bytes", bytes);
}

// The record LibTorch's reader opens for `name` ("data.pkl", "data/0"): FOLDER/name, where
// FOLDER is the first entry's folder, compared without case as its zip reader does.
const archive_entry* find_record(const std::vector<archive_entry>& entries, std::string_view name) {
  if (entries.empty())
    return nullptr;
  const auto slash = entries.front().name.find('/');
  if (slash == std::string::npos)
    return nullptr;
  const auto full = entries.front().name.substr(0, slash + 1) + std::string(name);
  const auto found = std::find_if(entries.begin(), entries.end(), [&](const archive_entry& e) {
    return same_ignoring_case(e.name, full);
  });
  return found == entries.end() ? nullptr : &*found;
}

std::string storages_problem(const std::vector<archive_entry>& entries, std::string_view name,
                             std::string_view pickle, double memory_bytes) {
  const auto contents = walk_pickle(pickle);
  if (!contents.problem.empty())
    return std::string(name) + ".pkl: " + contents.problem;
  double total = 0;
  for (const auto& storage : contents.storages) {
    if (storage.declared_bytes == 0)
      continue;  // LibTorch reads no record for an empty storage
    const auto record_name = std::string(name) + "/" + storage.key;
    const auto* record = find_record(entries, record_name);
    if (!record)
      return fmt::format("{}.pkl names the storage {}, which the archive does not hold", name,
                         record_name);
    if (record->uncompressed_bytes < storage.declared_bytes)
      return fmt::format("storage {} declares {} ({}) but its record holds {}", record_name,
                         bytes_text(static_cast<double>(storage.declared_bytes)), storage.type,
                         bytes_text(static_cast<double>(record->uncompressed_bytes)));
    if (record->deflated && record->uncompressed_bytes > storage.reached_bytes)
      return fmt::format("storage {} is deflated to inflate to {}, more than its tensors use ({})",
                         record_name, bytes_text(static_cast<double>(record->uncompressed_bytes)),
                         bytes_text(static_cast<double>(storage.reached_bytes)));
    total += static_cast<double>(record->uncompressed_bytes);
  }
  if (memory_bytes > 0 && total > memory_bytes)
    return fmt::format("its tensors take {}, more than this machine's memory ({})",
                       bytes_text(total), bytes_text(memory_bytes));
  return "";
}

// One record's bytes, inflated where deflated (archive_problem bounded what that can take).
std::string read_record(std::string_view archive, const std::string& name) {
  caffe2::serialize::PyTorchStreamReader reader(std::make_shared<buffer_reader>(archive));
  try {
    auto [data, size] = reader.getRecord(name);
    return std::string(static_cast<const char*>(data.get()), size);
  } catch (const c10::Error& e) {
    throw std::runtime_error(e.what_without_backtrace());
  }
}

}  // namespace

std::string archive_tensors_problem(std::string_view archive, std::string_view name,
                                    double memory_bytes) {
  const auto entries = archive_entries(archive);
  const auto pickle_name = std::string(name) + ".pkl";
  if (!find_record(entries, pickle_name))
    return "";
  std::string pickle;
  try {
    pickle = read_record(archive, pickle_name);
  } catch (const std::exception& e) {
    return pickle_name + ": " + e.what();
  }
  return storages_problem(entries, name, pickle, memory_bytes);
}

std::string script_archive_problem(std::string_view archive, double memory_bytes) {
  if (auto problem = archive_problem(archive); !problem.empty())
    return problem;
  for (const auto* pickle : {"data", "constants"})
    if (auto problem = archive_tensors_problem(archive, pickle, memory_bytes); !problem.empty())
      return problem;
  return "";
}

}  // namespace troupe
