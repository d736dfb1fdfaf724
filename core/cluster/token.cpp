#include "core/cluster/token.hpp"

#include "core/errors.hpp"
#include "core/io/whole_file.hpp"

#include <cstdlib>
#include <stdexcept>

namespace troupe {
namespace {

// A token is one line of a few dozen characters.
constexpr std::size_t max_token_file_bytes = 64 * 1024;

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
  std::string text;
  try {
    text = read_small_file(file, max_token_file_bytes);
  } catch (const std::length_error& e) {
    throw job_error(
        {"--token-file " + file + ": " + e.what() + ", more than a token file holds (one line)"});
  } catch (const std::runtime_error& e) {
    throw job_error({"--token-file " + file + ": " + e.what()});
  }
  auto token = trimmed(text.substr(0, text.find('\n')));
  if (token.empty())
    throw job_error({"--token-file " + file + ": holds no token on its first line"});
  return token;
}

}  // namespace troupe
