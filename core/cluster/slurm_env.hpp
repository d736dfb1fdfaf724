// What `troupe node` takes from the environment of a Slurm job step where its flags are not
// given, so that `srun troupe node` needs no per-task arguments (examples/slurm/):
//
//   join     $TROUPE_JOIN; else, inside a Slurm job, the first host of $SLURM_JOB_NODELIST (where
//            the batch script, and so the coordinator, runs) at port $TROUPE_PORT
//   name     in a step: $SLURMD_NODENAME-task$SLURM_PROCID, unique among the job's tasks
//   listen   in a step: $SLURMD_NODENAME, the node's name as Slurm knows it, which its peers
//            resolve as Slurm's daemons do
//   threads  $SLURM_CPUS_PER_TASK where the job asked for CPUs per task
//
// The token stays $TROUPE_TOKEN (or --token-file), which the batch script exports and srun
// passes on: Slurm has no secret of its own to offer.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace troupe {

/// Looks a variable up: its value, or null where it is not set.
using env_lookup = std::function<const char*(const char*)>;

/// The first host of a Slurm host list ("node[07-09,12],gpu1" -> "node07", "a,b" -> "a"),
/// keeping the range's zero padding. Throws std::invalid_argument naming the list when it is
/// empty or its brackets do not close.
std::string first_slurm_host(const std::string& nodelist);

/// The most compute threads one node offers (`troupe node --threads`, $SLURM_CPUS_PER_TASK).
constexpr int64_t max_node_threads = 4096;

struct slurm_node_defaults {
  std::string join;     ///< "HOST:PORT", or "" where the environment does not say
  std::string name;     ///< "" outside a step
  std::string listen;   ///< "" outside a step
  int64_t threads = 0;  ///< 0 where Slurm does not say
};

/// The defaults `env` gives. Throws std::invalid_argument naming the variable that is wrong: a
/// host list that does not parse, $TROUPE_PORT missing inside a Slurm job without $TROUPE_JOIN,
/// $SLURM_CPUS_PER_TASK or $SLURM_PROCID not a count (the CPUs at most max_node_threads).
slurm_node_defaults slurm_node_defaults_of(const env_lookup& env);

}  // namespace troupe
