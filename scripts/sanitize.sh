#!/usr/bin/env bash
# Builds the tests with a sanitizer into build-<name> and runs them (not the slow one).
#   sanitize.sh address   ASan + UBSan, every test
#   sanitize.sh thread    TSan, the actor tests (where the concurrency is)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
kind=${1:-address}
build="$root/build-$kind"
TROUPE_BUILD_DIR=$build "$root/scripts/build.sh" -DTROUPE_SANITIZE="$kind" -DCMAKE_BUILD_TYPE=RelWithDebInfo
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}  # LibTorch's static registries "leak" by design
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
if [ "$kind" = thread ]; then
  ctest --test-dir "$build" --output-on-failure -R 'troupe_actor_tests'
else
  ctest --test-dir "$build" --output-on-failure -LE slow
fi
