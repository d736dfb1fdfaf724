// The machine's physical memory: what the checks of model sizes and of the tensors a file would
// inflate to hold their totals against.
#pragma once

namespace troupe {

/// In bytes; 0 where it cannot be read (the checks are then skipped).
double physical_memory_bytes();

}  // namespace troupe
