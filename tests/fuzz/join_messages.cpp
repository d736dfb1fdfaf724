// Fuzz target: the messages a coordinator and its nodes exchange over the network
// (messages/cluster.hpp), decoded from bytes as CAF decodes them off the wire. The first byte
// picks the message: join_request (then the gatekeeper's join_refusal on what it claims),
// join_reply (then, when accepted, the job it carries as the node reads it) or ring_meta. A
// decoded reply or ring_meta must encode back to the bytes it was read from.
#include "core/cluster/join_check.hpp"
#include "core/errors.hpp"
#include "core/run/plan_wire.hpp"
#include "messages/cluster.hpp"
#include "tests/fuzz/fuzz_common.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/atom.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>

#include <vector>

namespace {

// Handles in a join_request decode against a real actor system, as in a node or coordinator.
// Never destroyed: at exit, CAF's own statics may be gone before a static system would be.
caf::actor_system& actor_system() {
  static auto* cfg = [] {
    auto* c = new caf::actor_system_config;
    c->set("scheduler.max-threads", 1);
    c->set("scheduler.policy", caf::atom("sharing"));
    return c;
  }();
  static auto* system = new caf::actor_system{*cfg};
  return *system;
}

bool same(const troupe::join_reply& a, const troupe::join_reply& b) {
  return a.refusal == b.refusal && a.plan_json == b.plan_json && a.plan_digest == b.plan_digest;
}

bool same(const troupe::ring_meta& a, const troupe::ring_meta& b) {
  return a.round == b.round && a.bucket == b.bucket && a.step == b.step;
}

// Decodes a T from the front of the bytes.
template <class T>
bool decode(const char* bytes, std::size_t size, T& out) {
  caf::binary_deserializer source{actor_system(), bytes, size};
  return !source(out);
}

// A decoded message must encode, and decode again to the same message. (Not necessarily to the
// same bytes: a length may have been written with more bytes than needed.)
template <class T>
void check_encoding(T& decoded) {
  std::vector<char> again;
  caf::binary_serializer sink{actor_system(), again};
  if (auto err = sink(decoded))
    troupe::fuzz::fail("a decoded message cannot be encoded again: " + caf::to_string(err));
  T back;
  if (!decode(again.data(), again.size(), back) || !same(back, decoded))
    troupe::fuzz::fail("a decoded message does not survive encoding and decoding again");
}

void on_request(const char* bytes, std::size_t size) {
  troupe::join_request req;
  if (!decode(bytes, size, req))
    return;
  // The gatekeeper gave this connection the challenge "c0".
  const troupe::join_claim claim{req.version, req.proof, req.name, req.threads, "", "c0"};
  troupe::join_terms open{"0.1.0", "", {}, 2};
  troupe::join_terms closed{"0.1.0", "s3cret", {"node-a", "node-b"}, 3};
  troupe::join_refusal(claim, open);
  const auto refusal = troupe::join_refusal(claim, closed);
  if (refusal.empty() && req.proof != troupe::join_proof("s3cret", "c0", req.name))
    troupe::fuzz::fail("a node without the proof of the token was let in");
}

void on_reply(const char* bytes, std::size_t size) {
  troupe::join_reply reply;
  if (!decode(bytes, size, reply))
    return;
  check_encoding(reply);
  if (!reply.refusal.empty())
    return;
  // As the node's take_job: the plan the coordinator sent, decoded and digested.
  const auto json = nlohmann::json::parse(reply.plan_json, nullptr, false);
  if (json.is_discarded())
    return;
  try {
    troupe::plan_digest(troupe::plan_from_json(json));
  } catch (const troupe::job_error&) {
  }
}

void on_ring_meta(const char* bytes, std::size_t size) {
  troupe::ring_meta meta;
  if (decode(bytes, size, meta))
    check_encoding(meta);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  actor_system();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0)
    return 0;
  const char* bytes = reinterpret_cast<const char*>(data) + 1;
  switch (data[0] % 3) {
    case 0:
      on_request(bytes, size - 1);
      break;
    case 1:
      on_reply(bytes, size - 1);
      break;
    default:
      on_ring_meta(bytes, size - 1);
      break;
  }
  return 0;
}
