// The coordinator's gatekeeper, the only actor it publishes: it answers joins (token, version,
// name, with TLS the name on the joining connection's certificate; core/cluster/join_check)
// with the job, keeps the roster of nodes that joined, and tells the session once every node is
// in and has taken the job, or why that will never be (the join timeout, a node that cannot
// load its data).
//
//   node -> gatekeeper     (challenge_atom) -> std::string: a fresh challenge for the sender's
//                          node, answered once by the join that follows
//   node -> gatekeeper     (join_atom, join_request) -> join_reply
//   node -> gatekeeper     (join_atom, failure) -> ok: the node took the job and is ready ("")
//                          or could not (why, e.g. its data files are bad)
//   session -> gatekeeper  (get_atom) -> answered, as an ordinary message, with "" once the
//                          roster is complete, or the reason it never will be
//   session -> gatekeeper  (close_atom) -> ok: no more joins; the roster stays as it is
// With cluster.on_node_loss "continue" the run takes replacements after it started: a lost
// node's name and place are free again, and a node that joins then and has loaded its data is
// handed to the run driver (which registered itself with (replace_atom, driver)) as
//   gatekeeper -> driver   (replace_atom, replacement_node)
#pragma once

#include "actors/links/guarded_links.hpp"
#include "actors/links/trusted_nodes.hpp"
#include "core/cluster/join_check.hpp"
#include "messages/cluster.hpp"

#include <caf/actor.hpp>
#include <caf/fwd.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct joined_node {
  std::string name;
  caf::actor agent;
  std::string peer_host;
  uint16_t peer_port = 0;
  bool ready = false;        ///< it has loaded its data and can start replicas
  bool replacement = false;  ///< it joined after the run started
};

using node_roster = std::shared_ptr<std::vector<joined_node>>;

struct gatekeeper_options {
  join_terms terms;
  std::string plan_json;    ///< handed to every node that joins (core/run/plan_wire)
  std::string plan_digest;  ///< its SHA-256
  double join_timeout_s = 0;
  std::shared_ptr<trusted_nodes> trusted;  ///< filled with every node that joins
  std::function<void(const std::string&)> log;
  /// Shared with the session, which reads it only after the gatekeeper said it is complete.
  node_roster roster;
  /// With TLS: where to learn which certificate a joining node's connection presented.
  std::optional<peer_names> names;
  caf::io::middleman_actor middleman;
  shipment files;  ///< handed with the job: the data files' digests, the model file's server
  /// Joins after the run started replace lost nodes (cluster.on_node_loss "continue").
  bool replacements = false;
};

caf::actor spawn_gatekeeper(caf::actor_system& system, gatekeeper_options options);

/// "a, b" or "none".
std::string names_of(const std::vector<joined_node>& nodes);

}  // namespace troupe
