#include "core/errors.hpp"

#include <c10/util/Exception.h>

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

std::string message_of(const std::exception& e) {
  if (const auto* torch = dynamic_cast<const c10::Error*>(&e))
    return torch->what_without_backtrace();
  return e.what();
}

}  // namespace troupe
