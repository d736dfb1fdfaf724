#include "core/cluster/token.hpp"

#include "core/errors.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace troupe {
namespace {

std::string trimmed(const std::string& s) {
  const auto first = s.find_first_not_of(" \t\r\n");
  if (first == std::string::npos)
    return "";
  return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
}

}  // namespace

std::string load_token(const std::string& file) {
  if (file.empty()) {
    const char* env = std::getenv(token_variable);
    return env != nullptr ? trimmed(env) : "";
  }
  std::ifstream in(file);
  if (!in)
    throw job_error({"--token-file " + file + ": cannot open: " + std::strerror(errno)});
  std::string line;
  std::getline(in, line);
  auto token = trimmed(line);
  if (token.empty())
    throw job_error({"--token-file " + file + ": holds no token on its first line"});
  return token;
}

}  // namespace troupe
