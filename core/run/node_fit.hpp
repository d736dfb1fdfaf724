// What a node checks before it takes its part of a plan it was sent (core/run/plan_wire): that
// the data it loaded from its own disk has the facts the coordinator planned with, and that it
// has every device the plan computes on. A node that does not fit says why at the join, and the
// run fails at once with that reason instead of at the first step.
//
// Thread safety: a pure function.
#pragma once

#include "core/data/data_source.hpp"
#include "core/device/device_plan.hpp"
#include "core/run/run_plan.hpp"

#include <string>

namespace troupe {

/// Empty when `plan` fits a node with data of facts `here` and devices `inventory`; else the
/// first misfit, naming the fact or the device and both values.
std::string node_misfit(const run_plan& plan, const data_facts& here,
                        const device_inventory& inventory);

}  // namespace troupe
