// What the caller of a run hands it besides the plan and the data: where metrics go, who hears
// about progress, the flag that asks it to stop, and (for a run across processes) where to wait
// for the nodes. Shared by every mode (actors/run_job.hpp).
#pragma once

#include "core/cluster/address.hpp"
#include "core/metrics/jsonl_writer.hpp"
#include "core/train/progress.hpp"

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace troupe {

/// The coordinator side of a run across processes (`troupe coordinator`, `--local-nodes`).
struct cluster_options {
  host_port listen;
  std::string token;  ///< "" accepts any node (the CLI allows that on loopback only)
  /// Called once the gatekeeper listens, with the port (the OS's pick when listen.port is 0).
  std::function<void(uint16_t port)> on_listening;
  /// One line for the user per event: listening, joined, refused, placed.
  std::function<void(const std::string&)> log;
};

struct run_options {
  /// Receives metrics records; may be null (nothing recorded).
  jsonl_writer* metrics = nullptr;
  /// Called on the run driver's thread after each step and evaluation; may be empty.
  std::function<void(const progress_update&)> on_progress;
  /// When set (e.g. by a SIGINT handler), the run stops after the step in progress and
  /// reports "failed" with the reason "interrupted after step N". May be null.
  const std::atomic<bool>* stop_requested = nullptr;
  /// Jobs with `cluster.nodes` wait for their nodes as these say; required for them.
  std::optional<cluster_options> cluster;
};

}  // namespace troupe
