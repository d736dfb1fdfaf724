#include "core/metrics/jsonl_writer.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace troupe {

jsonl_writer::jsonl_writer(const std::string& path) : path_(path) {
  file_ = std::fopen(path.c_str(), "a");
  if (file_ == nullptr)
    throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
}

jsonl_writer::~jsonl_writer() {
  if (file_ != nullptr)
    std::fclose(file_);
}

void jsonl_writer::write(const nlohmann::json& record) {
  if (file_ == nullptr)
    return;
  auto line = record.dump();
  line += '\n';
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    throw std::runtime_error(path_ + ": cannot write: " + std::strerror(errno));
  bytes_written_ += line.size();
}

}  // namespace troupe
