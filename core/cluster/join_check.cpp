#include "core/cluster/join_check.hpp"

#include "core/cluster/certs.hpp"
#include "core/config/json_fields.hpp"
#include "core/io/hex.hpp"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

#include <algorithm>
#include <cctype>
#include <stdexcept>

namespace troupe {
namespace {

std::string_view bytes_of(const unsigned char* bytes, std::size_t n) {
  return {reinterpret_cast<const char*>(bytes), n};
}

}  // namespace

bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size())
    return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

std::string new_challenge() {
  unsigned char bytes[32];
  if (RAND_bytes(bytes, sizeof bytes) != 1)
    throw std::runtime_error("the system's random generator failed");
  return to_hex(bytes_of(bytes, sizeof bytes));
}

std::string join_proof(const std::string& token, const std::string& challenge,
                       const std::string& name) {
  const auto message = challenge + "\n" + name;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (!HMAC(EVP_sha256(), token.data(), static_cast<int>(token.size()),
            reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac, &length))
    throw std::runtime_error("HMAC-SHA256 failed");
  return to_hex(bytes_of(mac, length));
}

namespace {

bool version_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '+';
}

// A version as it is ("0.2.0"), or as a cut JSON string when it is no plain version.
std::string shown_version(const std::string& version) {
  if (!version.empty() && version.size() <= 64 &&
      std::all_of(version.begin(), version.end(), version_char))
    return version;
  return render_value(version);
}

}  // namespace

std::string node_name_problem(const std::string& name) {
  if (name.empty())
    return "a node without a name";
  if (name.size() > max_node_name_size)
    return "node " + render_value(name) + ": a node name has at most " +
           std::to_string(max_node_name_size) + " characters";
  if (!std::isalnum(static_cast<unsigned char>(name.front())) ||
      !std::all_of(name.begin(), name.end(), is_name_char))
    return "node " + render_value(name) +
           ": a node name holds only A-Z a-z 0-9 . _ - and starts with a letter or a digit";
  return "";
}

std::string join_refusal(const join_claim& claim, const join_terms& terms) {
  const auto who = "node " + render_value(claim.name);
  // The token first: a stranger learns nothing else about the run.
  if (!terms.token.empty() && claim.proof.empty())
    return who + ": no token";
  if (!terms.token.empty() && claim.challenge.empty())
    return who + ": it answered no challenge (a replayed or forged join)";
  if (!terms.token.empty() &&
      !same_secret(claim.proof, join_proof(terms.token, claim.challenge, claim.name)))
    return who + ": wrong token (or a join replayed from another connection)";
  if (terms.certificates && claim.name == coordinator_name)
    return who + ": that name is the coordinator's";
  if (terms.certificates && claim.certificate_name != claim.name)
    return who + ": its connection presented " +
           (claim.certificate_name.empty()
                ? "no certificate"
                : "the certificate of \"" + claim.certificate_name + "\"");
  if (claim.version != terms.version)
    return who + " runs troupe " + shown_version(claim.version) +
           ", this coordinator runs troupe " + terms.version + ": both must run the same version";
  if (auto problem = node_name_problem(claim.name); !problem.empty())
    return problem;
  if (std::find(terms.joined.begin(), terms.joined.end(), claim.name) != terms.joined.end())
    return who + ": a node of that name has already joined";
  if (claim.threads < 1)
    return who + ": offers " + std::to_string(claim.threads) + " threads, needs at least 1";
  if (static_cast<int64_t>(terms.joined.size()) >= terms.wanted)
    return who + ": the run already has its " + std::to_string(terms.wanted) + " node(s)";
  return "";
}

std::vector<int64_t> place_replicas(int64_t replicas, int64_t nodes) {
  if (nodes < 1 || replicas < nodes)
    throw std::invalid_argument("place_replicas: " + std::to_string(replicas) + " replicas on " +
                                std::to_string(nodes) + " nodes");
  std::vector<int64_t> node_of;
  for (int64_t n = 0; n < nodes; ++n) {
    const int64_t count = replicas / nodes + (n < replicas % nodes ? 1 : 0);
    node_of.insert(node_of.end(), static_cast<std::size_t>(count), n);
  }
  return node_of;
}

}  // namespace troupe
