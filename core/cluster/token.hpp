// The shared secret a node presents when it joins. It comes from a file (--token-file) or from
// the environment (TROUPE_TOKEN), never from the command line, where `ps` shows it to everyone.
#pragma once

#include <string>

namespace troupe {

/// The environment variable that may hold the token.
inline const char* token_variable = "TROUPE_TOKEN";

/// The token from `file` when given (its first line, surrounding whitespace removed), else from
/// TROUPE_TOKEN, else "". Throws job_error for a file that cannot be read or holds no token.
std::string load_token(const std::string& file);

}  // namespace troupe
