#include "core/cluster/shipped_files.hpp"

#include "core/data/fashion_mnist.hpp"
#include "core/errors.hpp"
#include "core/io/regular_file.hpp"

#include <fmt/format.h>

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <stdexcept>

namespace troupe {

std::vector<std::string> data_files(const data_config& config) {
  switch (config.kind) {
    case data_kind::fashion_mnist:
      return fashion_mnist_files(config.path);
    case data_kind::tensors:
    case data_kind::csv:
      return {config.train_file, config.test_file};
    case data_kind::npy: {
      std::vector<std::string> files;
      for (const auto* split : {&config.train_arrays, &config.test_arrays})
        for (const auto* column : {&split->x, &split->y})
          files.insert(files.end(), column->begin(), column->end());
      return files;
    }
    case data_kind::image_folder:
      // Thousands of images: each node decodes its own folders, and the plan's facts (rows
      // per split, classes, row shape) are what a node is checked against at its join.
    case data_kind::synthetic:
      break;
  }
  return {};
}

file_digest digest_file(const std::string& path) {
  auto in = open_data_file(path);
  sha256_stream hash;
  std::vector<char> chunk(1 << 20);
  int64_t bytes = 0;
  for (std::size_t n = chunk.size(); n == chunk.size();) {
    n = in.read(chunk.data(), chunk.size());
    hash.update({chunk.data(), n});
    bytes += static_cast<int64_t>(n);
  }
  return {path, bytes, hash.hex()};
}

std::string data_mismatch(const std::vector<file_digest>& coordinator) {
  for (const auto& theirs : coordinator) {
    file_digest mine;
    try {
      mine = digest_file(theirs.path);
    } catch (const data_error& e) {
      return fmt::format("data file {}: the coordinator has it, this node cannot read it ({})",
                         theirs.path, e.what());
    }
    if (mine.bytes != theirs.bytes || mine.sha256 != theirs.sha256)
      return fmt::format(
          "data file {} differs from the coordinator's: {} bytes, sha256 {} here; {} bytes, "
          "sha256 {} there",
          theirs.path, mine.bytes, mine.sha256, theirs.bytes, theirs.sha256);
  }
  return "";
}

file_receiver::file_receiver(std::string path, file_digest expected)
    : path_(std::move(path)), expected_(std::move(expected)) {
  if (expected_.bytes <= 0 || expected_.bytes > max_shipped_file_bytes)
    throw std::runtime_error(fmt::format("{}: the coordinator announced {} bytes (1 to {} taken)",
                                         expected_.path, expected_.bytes, max_shipped_file_bytes));
  if (expected_.sha256.size() != 64)
    throw std::runtime_error(expected_.path + ": the coordinator announced no SHA-256");
  const int fd = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0 || (file_ = ::fdopen(fd, "wb")) == nullptr) {
    if (fd >= 0)
      ::close(fd);
    throw std::runtime_error(path_ + ": cannot be created (" + std::strerror(errno) + ")");
  }
}

file_receiver::~file_receiver() {
  if (file_ != nullptr)
    std::fclose(file_);
}

void file_receiver::append(const std::string& chunk) {
  const auto n = static_cast<int64_t>(chunk.size());
  if (n == 0 || n > shipped_chunk_bytes || received_ + n > expected_.bytes)
    throw std::runtime_error(fmt::format("{}: a chunk of {} bytes after {} of the {} announced",
                                         expected_.path, n, received_, expected_.bytes));
  if (file_ == nullptr || std::fwrite(chunk.data(), 1, chunk.size(), file_) != chunk.size())
    throw std::runtime_error(path_ + ": cannot be written (" + std::strerror(errno) + ")");
  hash_.update(chunk);
  received_ += n;
}

void file_receiver::finish() {
  if (!complete())
    throw std::runtime_error(fmt::format("{}: {} of the {} announced bytes arrived", expected_.path,
                                         received_, expected_.bytes));
  const bool closed = std::fflush(file_) == 0 && std::fclose(file_) == 0;
  file_ = nullptr;
  if (!closed)
    throw std::runtime_error(path_ + ": cannot be written (" + std::strerror(errno) + ")");
  const auto got = hash_.hex();
  if (got != expected_.sha256)
    throw std::runtime_error(fmt::format("{}: arrived with sha256 {}, the coordinator announced {}",
                                         expected_.path, got, expected_.sha256));
}

}  // namespace troupe
