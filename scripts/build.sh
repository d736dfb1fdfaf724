#!/usr/bin/env bash
# Configures and builds troupe (Release) into ./build, or into $TROUPE_BUILD_DIR: every target,
# or only $TROUPE_TARGET (e.g. troupe, the program). Extra arguments go to CMake's configure
# step, e.g. -DTROUPE_SANITIZE=address.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${TROUPE_BUILD_DIR:-$root/build}
jobs=${TROUPE_JOBS:-$(nproc)}
cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j "$jobs" ${TROUPE_TARGET:+--target "$TROUPE_TARGET"}
