// The allocator settings the troupe program makes before LibTorch allocates
// (core/run/allocator_settings): glibc's malloc takes them.
#include "core/run/allocator_settings.hpp"

#include <doctest/doctest.h>

#include <cstddef>  // __GLIBC__, tested below

using namespace troupe;

TEST_SUITE("run_pieces") {
  TEST_CASE("keep_step_memory_for_reuse: glibc's malloc takes the settings") {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    CHECK(keep_step_memory_for_reuse());
#else
    // A sanitizer's allocator, or another C library's, has settings of its own: nothing to set.
    keep_step_memory_for_reuse();
#endif
  }
}
