// What the caller of a run hands it besides the plan and the data: where metrics go, who hears
// about progress, the flag that asks it to stop, and (for a run across processes) where to wait
// for the nodes. Shared by every mode (actors/run_job.hpp).
#pragma once

#include "core/cluster/address.hpp"
#include "core/cluster/certs.hpp"
#include "core/metrics/jsonl_writer.hpp"
#include "core/train/progress.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace troupe {

struct run_checkpoint;  // core/checkpoint/run_checkpoint.hpp

/// The coordinator side of a run across processes (`troupe coordinator`, `--local-nodes`).
struct cluster_options {
  host_port listen;
  std::string token;  ///< "" accepts any node (the CLI allows that on loopback only)
  /// Called once the gatekeeper listens, with the port (the OS's pick when listen.port is 0).
  std::function<void(uint16_t port)> on_listening;
  /// One line for the user per event: listening, joined, refused, placed.
  std::function<void(const std::string&)> log;
  /// Mutual TLS with every node: the coordinator's files (core/cluster/certs.hpp). None: TCP.
  std::optional<tls_files> tls;
  /// Called once the run is over and the nodes that joined were told, with their names.
  std::function<void(const std::vector<std::string>& told)> on_ended;
  /// Asked while the nodes are awaited: why the missing ones can no longer come (local nodes
  /// that exited), or "". May be empty.
  std::function<std::string()> joins_impossible;
};

struct run_options {
  /// Receives metrics records; may be null (nothing recorded).
  jsonl_writer* metrics = nullptr;
  /// Called on the run driver's thread after each step and evaluation; may be empty.
  std::function<void(const progress_update&)> on_progress;
  /// When set (e.g. by a SIGINT handler), the run stops and reports "failed" with the reason
  /// "interrupted after step N": after the step in progress, or, with a checkpoint_dir, at the
  /// first step every worker can still stop after (a few steps on), once the checkpoint of that
  /// step is written. May be null.
  const std::atomic<bool>* stop_requested = nullptr;
  /// The run directory its checkpoints go into (DIR/checkpoints), as job.checkpoint says and
  /// when it stops; empty: the run writes none.
  std::string checkpoint_dir;
  /// A resumed run: the checkpoint it continues from, after its step. Null: from the start.
  std::shared_ptr<const run_checkpoint> resume_from;
  /// Jobs with `cluster.nodes` wait for their nodes as these say; required for them.
  std::optional<cluster_options> cluster;
};

}  // namespace troupe
