#!/usr/bin/env bash
# The README's second command: installs what is missing (with python3-torch for the weight
# checks), builds, and runs every test. `--fast` skips the tests labeled slow.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
# Each step's seconds, printed last (also when a step fails): a slow CI run then says whether the
# packages, the build or the tests took the time.
phases=""
timed() {
  local name=$1 t0=$SECONDS status=0
  shift
  "$@" || status=$?
  phases+="$name $((SECONDS - t0)) s, "
  return $status
}
trap 'echo "test.sh: ${phases}$SECONDS s in all"' EXIT
timed installing "$root/scripts/install_deps.sh" --tests
timed building "$root/scripts/build.sh"
label_args=()
[ "${1:-}" = "--fast" ] && label_args=(-LE slow)
# Two tests at a time (TROUPE_TEST_JOBS changes it): CI's machine has two cores, and most tests
# wait on processes and sockets more than they compute.
timed testing ctest --test-dir "${TROUPE_BUILD_DIR:-$root/build}" --output-on-failure \
  --parallel "${TROUPE_TEST_JOBS:-2}" "${label_args[@]}"
