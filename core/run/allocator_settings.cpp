#include "core/run/allocator_settings.hpp"

#include <cstddef>  // defines __GLIBC__ where the C library is glibc's, before it is tested

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace troupe {

bool keep_step_memory_for_reuse() {
#if defined(__GLIBC__)
  constexpr int mmap_threshold = 32 << 20;
  constexpr int trim_threshold = 128 << 20;
  return mallopt(M_MMAP_THRESHOLD, mmap_threshold) == 1 &&
         mallopt(M_TRIM_THRESHOLD, trim_threshold) == 1;
#else
  return false;
#endif
}

}  // namespace troupe
