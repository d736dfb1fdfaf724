// `troupe run --resume DIR` and `troupe coordinator --resume DIR`: where a run continues from.
// The newest checkpoint in DIR/checkpoints that verifies (each one skipped is said on stderr),
// decoded, with the resolved job it was written under.
#pragma once

#include "core/checkpoint/run_checkpoint.hpp"
#include "core/run/folder_lock.hpp"
#include "core/run/run_plan.hpp"

#include <memory>
#include <string>

namespace troupe {

struct resume_point {
  std::shared_ptr<const run_checkpoint> checkpoint;
  std::string folder;    ///< DIR/checkpoints/step-S
  int64_t skipped = 0;   ///< newer checkpoints that did not verify
  folder_lock_ptr lock;  ///< DIR's, taken before its checkpoints were read
};

/// Throws job_error naming DIR when it is not a run's folder, another run holds it, or no
/// checkpoint there verifies or decodes.
resume_point find_resume_point(const std::string& run_dir);

/// Throws job_error when the checkpoint's state cannot be the plan's: another number of parts,
/// weights of another size, or a step the plan does not run past.
void check_resume_matches(const resume_point& point, const run_plan& plan);

}  // namespace troupe
