// What a run's checkpoints hold on disk, from the plan, and the refusal of a run whose output
// folder cannot hold them: `every_steps: 1` with `keep: 100000` over 10^5 steps was accepted
// (about 270 GB) and ended when the disk filled (issue 39, row 9).
//
// Thread safety: pure functions of their inputs (disk_free_bytes reads the file system).
#pragma once

#include "core/run/run_plan.hpp"

#include <cstdint>
#include <string>

namespace troupe {

/// The bytes of one checkpoint of the run (weights.pt, state.pt with every part's weights and
/// optimizer state and the best weights, state.json), estimated from the plan.
double checkpoint_bytes(const run_plan& plan);

/// The checkpoints on disk at the most: the newest `keep` (or as many as the run writes, if
/// fewer), and one more while the next is being written before the oldest goes.
int64_t checkpoints_at_most(const run_plan& plan);

/// What the file system holding `folder` (or its nearest existing parent) has free for this
/// user; a negative number when that cannot be read.
double disk_free_bytes(const std::string& folder);

/// The bytes of the regular files under `folder` (0 where there is none): what a resumed run's
/// checkpoints already hold of the space check_checkpoints_fit counts, since retention removes
/// them as the new ones come.
double bytes_under(const std::string& folder);

/// Throws job_error when the checkpoints at their most exceed `free_bytes` (negative: unknown,
/// no check). `folder` names the output folder in the message.
void check_checkpoints_fit(const run_plan& plan, const std::string& folder, double free_bytes);

}  // namespace troupe
