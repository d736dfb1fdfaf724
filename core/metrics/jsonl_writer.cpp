#include "core/metrics/jsonl_writer.hpp"

#include "core/errors.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace troupe {

jsonl_writer::jsonl_writer(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  struct stat info {};
  if (::fstat(fd_, &info) == 0)
    whole_size_ = static_cast<long long>(info.st_size);
}

jsonl_writer::~jsonl_writer() {
  if (fd_ >= 0)
    ::close(fd_);
}

void jsonl_writer::write(const nlohmann::json& record) {
  if (fd_ < 0)
    return;
  auto line = record.dump();
  line += '\n';
  std::size_t done = 0;
  while (done < line.size()) {
    const auto n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      // The part that made it would run into the next record: cut it off.
      if (done > 0 && ::ftruncate(fd_, whole_size_) != 0) {
        // Nothing more to do: the error below is what the caller needs to hear.
      }
      throw output_error(path_ + ": cannot write: " + std::strerror(err));
    }
    done += static_cast<std::size_t>(n);
  }
  whole_size_ += static_cast<long long>(line.size());
  bytes_written_ += line.size();
}

}  // namespace troupe
