// The files of a run across processes, as actors move them (core/cluster/shipped_files has the
// checks): the coordinator states its data files' digests and serves a TorchScript model file
// in chunks to the nodes it admitted; a node checks its own data files against the digests and
// fetches the model file into its scratch folder before it takes the job.
//
//   node -> model server  (chunk_atom, offset) -> std::string   at most shipped_chunk_bytes
//                                                               from `offset`; only for nodes
//                                                               the gatekeeper admitted
#pragma once

#include "actors/links/trusted_nodes.hpp"
#include "core/job/job_config.hpp"
#include "messages/cluster.hpp"

#include <caf/actor.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/fwd.hpp>

#include <functional>
#include <memory>
#include <string>

namespace troupe {

/// Coordinator side: the digests of `job`'s data files and, for a torchscript model, a server
/// of the model file's bytes (read once, here, so that every node receives the same bytes
/// whatever happens to the file later). Throws data_error or model_file_error naming a file
/// that cannot be read.
shipment ship_job_files(caf::actor_system& system, const job_config& job,
                        std::shared_ptr<trusted_nodes> trusted);

/// Node side: calls `done("")` once this node's data files match `files` and the model file (if
/// any) is in `model_path`, whole and with the stated SHA-256; else `done(why)`. The chunks are
/// fetched one after another by `self`, each within 30 s.
void receive_job_files(caf::event_based_actor* self, const shipment& files,
                       const std::string& model_path,
                       std::function<void(const std::string& failure)> done);

}  // namespace troupe
