// Join claims as nodes make them, for the join check's tests.
#pragma once

#include "core/cluster/join_check.hpp"

#include <cstdint>
#include <string>

namespace troupe::testing {

// What a node holding `token` claims after answering the challenge "c0".
inline join_claim claim(const std::string& version, const std::string& token,
                        const std::string& name, int64_t threads,
                        const std::string& certificate = "") {
  return {version, token.empty() ? "" : join_proof(token, "c0", name), name, threads, certificate,
          "c0"};
}

}  // namespace troupe::testing
