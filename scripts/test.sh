#!/usr/bin/env bash
# The README's second command: installs what is missing (with python3-torch for the weight
# checks), builds, and runs every test. `--fast` skips the tests labeled slow.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install_deps.sh" --tests
"$root/scripts/build.sh"
label_args=()
[ "${1:-}" = "--fast" ] && label_args=(-LE slow)
# Two tests at a time (TROUPE_TEST_JOBS changes it): CI's machine has two cores, and most tests
# wait on processes and sockets more than they compute.
ctest --test-dir "${TROUPE_BUILD_DIR:-$root/build}" --output-on-failure \
  --parallel "${TROUPE_TEST_JOBS:-2}" "${label_args[@]}"
