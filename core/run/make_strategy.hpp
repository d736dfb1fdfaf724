// The strategy a plan's policy runs as (core/policy/step_strategy.hpp).
#pragma once

#include "core/policy/step_strategy.hpp"
#include "core/run/run_plan.hpp"

#include <memory>

namespace troupe {

/// Pipelines flush every step; replicas run their policy (sync, local_sgd, a schedule of both,
/// or async); the ensemble's one worker runs sync with nothing to combine. `first_step`: where
/// the run starts (a resumed run: after its checkpoint).
std::unique_ptr<step_strategy> make_strategy(const run_plan& plan, int64_t first_step = 0);

}  // namespace troupe
