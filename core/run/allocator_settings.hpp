// How the process's allocator should treat LibTorch's per-step memory. Call once, first thing
// in main, before LibTorch allocates: the troupe program and the benchmarks that train do.
#pragma once

namespace troupe {

/// glibc's malloc serves a request of 128 KiB or more with a fresh mmap and hands it back to the
/// kernel on free, unless earlier frees raised that threshold (it adapts to the sizes freed),
/// and trims the heap's free top past twice it. LibTorch allocates a step's activations and
/// temporaries anew every step, many of them above 128 KiB, so whether a run reuses that memory
/// or faults in and zero-fills fresh pages every step depended on the order of its first frees:
/// one replica of the Fashion-MNIST CNN ran at 2,900 or 4,150 samples/s from one build of the
/// same code to the next (perf: page faults and page clearing 9.5% of the time against 3.2%).
/// This serves every request below 32 MiB (glibc's largest threshold) from the heap and keeps up
/// to 128 MiB free at its top, so that the fast case is the only one; peak resident memory grew
/// by 4 MB there. Returns false where the allocator is not glibc's or refused the settings.
bool keep_step_memory_for_reuse();

}  // namespace troupe
