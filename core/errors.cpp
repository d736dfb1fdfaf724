#include "core/errors.hpp"

namespace troupe {
namespace {

std::string join_lines(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& line : lines) {
    if (!out.empty())
      out += '\n';
    out += line;
  }
  return out;
}

}  // namespace

job_error::job_error(std::vector<std::string> problems)
    : std::runtime_error(join_lines(problems)), problems_(std::move(problems)) {}

}  // namespace troupe
