// Whether a node may join a run: the rules the coordinator's gatekeeper applies, as a pure
// function so that every refusal can be tested without a network.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace troupe {

/// What a joining node claims.
struct join_claim {
  std::string version;
  /// join_proof of the node's token over the challenge the coordinator gave it: never the
  /// token itself, so that join bytes captured on a plaintext link and replayed do not get in
  /// (the replay meets a fresh challenge).
  std::string proof;
  std::string name;
  int64_t threads = 0;
  /// With TLS: the CN of the certificate the node's connection presented ("" when none).
  std::string certificate_name{};
  /// The challenge the coordinator gave the node's connection, used once ("" when none).
  std::string challenge{};
};

/// What the coordinator expects.
struct join_terms {
  std::string version;
  std::string token;                ///< "" when the coordinator has none: any token is fine
  std::vector<std::string> joined;  ///< names of the nodes already in
  int64_t wanted = 0;               ///< nodes the job needs
  /// TLS: a node joins under the name on its certificate, and never as the coordinator.
  bool certificates = false;
};

/// The longest node name: a host name (at most 64) and a suffix such as "-task17" or a PID.
constexpr std::size_t max_node_name_size = 128;

/// Why `name` cannot name a node, or "": 1 to max_node_name_size of A-Z a-z 0-9 . _ -, starting
/// with a letter or digit. Names show in logs, sort the ranks and name TLS files. A refusal shows
/// a name off the wire as a cut JSON string (render_value), so that it cannot put line breaks or
/// terminal escapes into the coordinator's log.
std::string node_name_problem(const std::string& name);

/// Returns why `claim` is refused, or "" when it may join. The token is compared in time
/// independent of where it differs, so a stranger cannot guess it byte by byte.
std::string join_refusal(const join_claim& claim, const join_terms& terms);

/// Compares two secrets in time that depends only on their lengths.
bool same_secret(const std::string& a, const std::string& b);

/// A fresh challenge: 32 random bytes from the system's generator, as hex.
std::string new_challenge();

/// HMAC-SHA256, keyed with `token`, of the challenge and the node's name, as hex: what a node
/// sends to prove it holds the token.
std::string join_proof(const std::string& token, const std::string& challenge,
                       const std::string& name);

/// Which node hosts each replica: contiguous blocks in rank order (neighbors in the ring share
/// a node where they can), as even as possible, the first replicas % nodes get one more.
std::vector<int64_t> place_replicas(int64_t replicas, int64_t nodes);

}  // namespace troupe
