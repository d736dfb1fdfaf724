#include "core/checkpoint/checkpoint_store.hpp"

#include "core/checkpoint/sha256.hpp"
#include "core/io/atomic_file.hpp"
#include "core/io/shallow_json.hpp"
#include "core/io/whole_file.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace troupe {
namespace fs = std::filesystem;
namespace {

constexpr const char* manifest_name = "manifest.json";
constexpr const char* step_prefix = "step-";

[[noreturn]] void fail(const std::string& path, const char* what, int err) {
  throw std::runtime_error(path + ": cannot " + what + ": " + std::strerror(err));
}

// Creates `path` with `bytes` and fsyncs it before it is closed. Returns the bytes' SHA-256,
// computed piece by piece as they are written (one pass over them, each piece still in cache).
std::string write_synced(const std::string& path, const std::string& bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    fail(path, "create", errno);
  constexpr std::size_t piece = 256 << 10;
  sha256_stream digest;
  for (std::size_t done = 0; done < bytes.size();) {
    const auto size = std::min(piece, bytes.size() - done);
    digest.update(std::string_view(bytes.data() + done, size));
    for (std::size_t written = 0; written < size;) {
      const ssize_t n = ::write(fd, bytes.data() + done + written, size - written);
      if (n < 0 && errno == EINTR)
        continue;
      if (n < 0) {
        const int err = errno;
        ::close(fd);
        fail(path, "write", err);
      }
      written += static_cast<std::size_t>(n);
    }
    done += size;
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(path, "flush", err);
  }
  if (::close(fd) != 0)
    fail(path, "close", errno);
  return digest.hex();
}

// A rename or a new entry is only durable once its folder is synced too.
void sync_folder(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    fail(path, "open", errno);
  const int status = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (status != 0)
    fail(path, "flush", err);
}

// A manifest lists a few files: kilobytes. A longer one is not troupe's.
constexpr std::size_t max_manifest_bytes = std::size_t{1} << 20;

// A file of a checkpoint folder, read only once it is a regular file of the size its manifest
// gives: a folder's file replaced by something else (a link to /dev/zero, a file grown huge) is
// refused before any of it is read, not read until memory runs out.
std::string read_listed_file(const fs::path& path, int64_t listed_size) {
  std::error_code ec;
  const auto status = fs::status(path, ec);
  if (ec || !fs::is_regular_file(status))
    throw std::runtime_error(path.filename().string() + " is missing or not a regular file");
  const auto size = fs::file_size(path, ec);
  if (ec || static_cast<int64_t>(size) != listed_size)
    throw std::runtime_error(path.filename().string() + " has " + std::to_string(size) +
                             " bytes, the manifest says " + std::to_string(listed_size));
  return read_whole_file(path.string());
}

std::string read_manifest(const fs::path& folder) {
  try {
    return read_small_file((folder / manifest_name).string(), max_manifest_bytes);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string(manifest_name) + ": " + e.what());
  }
}

// The step of a folder named step-S, or -1.
int64_t step_of(const fs::path& folder) {
  const auto name = folder.filename().string();
  if (name.rfind(step_prefix, 0) != 0 || name.size() == std::strlen(step_prefix))
    return -1;
  const auto digits = name.substr(std::strlen(step_prefix));
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }) ||
      digits.size() > 15)
    return -1;
  return std::stoll(digits);
}

// Checkpoint folders, newest first. Any entry may be anything a user or a disk left there (a
// link loop, a folder it may not read): each is judged without throwing, and what cannot be
// listed or judged is told to `log` (null: nobody asks) and passed over.
std::vector<fs::path> stored_steps(const std::string& folder,
                                   const std::function<void(const std::string&)>& log = nullptr) {
  std::vector<fs::path> out;
  std::error_code ec;
  fs::directory_iterator it(folder, ec);
  if (ec && ec != std::errc::no_such_file_or_directory && log)
    log("cannot list " + folder + ": " + ec.message());
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    const auto& path = it->path();
    if (step_of(path) < 0)
      continue;
    std::error_code type_error;
    if (it->is_directory(type_error))
      out.push_back(path);
    else if (type_error && log)
      log("checkpoint " + path.filename().string() + " skipped: " + type_error.message());
  }
  std::sort(out.begin(), out.end(),
            [](const fs::path& a, const fs::path& b) { return step_of(a) > step_of(b); });
  return out;
}

// A whole number of the manifest: a float (1e30) has no int64_t to become.
int64_t manifest_integer(const nlohmann::json& object, const char* key) {
  const auto& value = object.at(key);
  if (!value.is_number_integer())
    throw std::runtime_error(std::string(manifest_name) + ": \"" + key +
                             "\" is not a whole number");
  return value.get<int64_t>();
}

// Loads and verifies one checkpoint folder; throws std::runtime_error saying what is wrong.
stored_checkpoint load_verified(const fs::path& folder) {
  const auto manifest = parse_shallow_json(read_manifest(folder));
  if (manifest.is_discarded())
    throw std::runtime_error(std::string(manifest_name) + ": not JSON, or nested too deep");
  stored_checkpoint c;
  try {
    c.step = manifest_integer(manifest, "step");
    if (c.step != step_of(folder))
      throw std::runtime_error("the manifest names step " + std::to_string(c.step));
    c.job_sha256 = manifest.value("job_sha256", "");
    for (const auto& entry : manifest.at("files")) {
      const auto name = entry.at("name").get<std::string>();
      if (name.find('/') != std::string::npos || name == manifest_name)
        throw std::runtime_error("the manifest names a file \"" + name + "\"");
      auto bytes = read_listed_file(folder / name, manifest_integer(entry, "size"));
      if (sha256_hex(bytes) != entry.at("sha256").get<std::string>())
        throw std::runtime_error(name + ": its SHA-256 differs from the manifest's");
      c.files.push_back({name, std::move(bytes)});
    }
  } catch (const nlohmann::json::exception&) {
    // A key missing or of another type, or the manifest not an object: JSON's own words
    // ("cannot use at() with array") say nothing of which file is wrong.
    throw std::runtime_error(std::string(manifest_name) +
                             ": not the manifest troupe writes (an object with \"step\" and "
                             "\"files\", each file's \"name\", \"size\" and \"sha256\")");
  }
  return c;
}

// Keeps the newest `keep` checkpoints that verify; removes older ones and stray temporaries.
void retain(const std::string& folder, int64_t keep, int64_t newest) {
  int64_t kept = 0;
  for (const auto& path : stored_steps(folder)) {
    std::error_code ec;
    if (step_of(path) == newest || (kept < keep && fs::exists(path / manifest_name, ec))) {
      ++kept;
      continue;
    }
    fs::remove_all(path, ec);
  }
}

}  // namespace

const std::string* stored_checkpoint::find(const std::string& name) const {
  for (const auto& f : files)
    if (f.name == name)
      return &f.bytes;
  return nullptr;
}

std::string checkpoints_folder(const std::string& run_dir) {
  return (fs::path(run_dir) / "checkpoints").string();
}

int64_t write_checkpoint(const std::string& run_dir, const stored_checkpoint& c, int64_t keep) {
  const auto folder = checkpoints_folder(run_dir);
  // Never the run's folder itself: one renamed or removed while the run went on was made again
  // here, and the run's last files went to a folder without its job.json and metrics.
  std::error_code gone;
  if (!fs::is_directory(run_dir, gone))
    throw std::runtime_error(run_dir +
                             ": the run's folder is gone (renamed or removed while the run "
                             "went on); no checkpoint written");
  fs::create_directories(folder);
  const auto name = step_prefix + std::to_string(c.step);
  const auto tmp = fs::path(folder) / (".tmp-" + name);
  const auto final_path = fs::path(folder) / name;
  std::error_code ec;
  fs::remove_all(tmp, ec);  // a torn attempt at the same step, from a killed run
  int64_t bytes = 0;
  try {
    fs::create_directories(tmp);
    nlohmann::json manifest = {{"step", c.step}, {"files", nlohmann::json::array()}};
    if (!c.job_sha256.empty())
      manifest["job_sha256"] = c.job_sha256;
    for (const auto& f : c.files) {
      const auto sha256 = write_synced((tmp / f.name).string(), f.bytes);
      manifest["files"].push_back({{"name", f.name}, {"size", f.bytes.size()}, {"sha256", sha256}});
      bytes += static_cast<int64_t>(f.bytes.size());
    }
    write_synced((tmp / manifest_name).string(), manifest.dump(2) + "\n");
    sync_folder(tmp.string());
  } catch (...) {
    // A full disk, most often: the torn folder goes now, not at the next run's start, so that
    // it does not hold the space the run's summary needs.
    fs::remove_all(tmp, ec);
    throw;
  }
  // A checkpoint of the same step from before a resume goes first; one that cannot (a folder
  // made unreadable) is named, or the rename below fails with "Directory not empty".
  fs::remove_all(final_path, ec);
  if (ec) {
    const auto why = ec.message();
    fs::remove_all(tmp, ec);
    throw std::runtime_error("cannot replace " + final_path.string() +
                             " (an older checkpoint of the same step): " + why);
  }
  fs::rename(tmp, final_path);
  sync_folder(folder);
  write_file_atomically((fs::path(folder) / "latest").string(), name + "\n");
  sync_folder(folder);
  retain(folder, std::max<int64_t>(1, keep), c.step);
  return bytes;
}

std::optional<stored_checkpoint> read_latest_checkpoint(
    const std::string& run_dir, const std::function<void(const std::string&)>& log,
    const std::string& job_sha256) {
  for (const auto& path : stored_steps(checkpoints_folder(run_dir), log)) {
    try {
      auto c = load_verified(path);
      if (!job_sha256.empty() && !c.job_sha256.empty() && c.job_sha256 != job_sha256)
        throw std::runtime_error("it belongs to another job (its job's SHA-256 " +
                                 c.job_sha256.substr(0, 12) + ", this run's " +
                                 job_sha256.substr(0, 12) + ")");
      return c;
    } catch (const std::exception& e) {
      if (log)
        log("checkpoint " + path.filename().string() + " skipped: " + e.what());
    }
  }
  return std::nullopt;
}

}  // namespace troupe
