#!/usr/bin/env bash
# Builds the tests with a sanitizer into build-<name> and runs them (not the slow one).
#   sanitize.sh address   ASan + UBSan, every test
#   sanitize.sh address core   ASan + UBSan, the core library's tests only
#   sanitize.sh thread    TSan, the actor tests (where the concurrency is)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-address}
build="$root/build-$kind"
# -O1 -g1: line tables are all a sanitizer's stacks need, and LibTorch's headers compile far
# faster without full debug information: the TSan build of the actor tests (228 objects) took
# 19 minutes on 2 cores, where -O2 -g had built 15 of them in 7.
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTROUPE_SANITIZE="$kind" \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" >/dev/null
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ "$kind" = thread ]; then
  cmake --build "$build" -j "$(nproc)" --target troupe_actor_tests
  # LibTorch and libgomp are not built with TSan: their internal synchronization is invisible
  # to it, so reports whose every frame is inside them are suppressed (tests/tsan.supp).
  # history_size=7 (the most): a tensor made by one worker thread and read on another after a
  # CAF message may have been written long before; with less history TSan cannot restore that
  # write's stack, so the suppressions above cannot match it and it reports CAF's hand-off.
  export TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$root/tests/tsan.supp:halt_on_error=1:second_deadlock_stack=1:history_size=7}
  ctest --test-dir "$build" --output-on-failure -R 'troupe_actor_tests'
else
  # LibTorch's static registries are never freed by design: leak reports would be all noise.
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
  if [ "${2:-}" = core ]; then  # the core library's tests alone: the quick one
    cmake --build "$build" -j "$(nproc)" --target troupe_core_tests
    ctest --test-dir "$build" --output-on-failure -R '^troupe_core_tests'
  else
    cmake --build "$build" -j "$(nproc)"
    ctest --test-dir "$build" --output-on-failure -LE slow
  fi
fi
