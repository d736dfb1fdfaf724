// The intra-op threads of a thread that computes in a run: every such thread of a process takes
// the plan's number (parallelism.threads_per_replica, resolved), the workers and the parameter
// server (whole or in shards) alike.
//
// Why one number for all: Debian's OpenBLAS (its OpenMP build, which LibTorch's matrix products
// call) keeps a single thread count for the whole process, which each call resets to the calling
// thread's OpenMP team size unless it is already 1 (0.3.21's num_cpu_avail). With a worker on 2
// threads and its server on 1, the worker's products ran on 1 or on 2 BLAS threads depending on
// which thread called first, and the same async run ended with weights differing in the last
// bits (2e-7) one time in six on a loaded machine. With every thread on the same number the
// count never moves.
#pragma once

namespace troupe {

struct run_plan;

/// Sets the calling thread's ATen intra-op threads (its OpenMP team size) to the plan's.
void use_plan_threads(const run_plan& plan);

}  // namespace troupe
