# skip REASON: ends a test script as skipped (exit 77, which ctest reports as a skip) because
# something it needs is missing from this machine. Under CI (CI=true, which .ci/run sets) a
# missing tool is a failure instead (exit 1): CI's machine is set up by the README's commands,
# and a test that quietly never ran there would hide that they do not install what it needs.
# Sourced by tests/lib/harness.sh, and on its own by scripts that end before they source it.
skip() {
  echo "skipped: $*"
  if [ "${CI:-}" = true ]; then
    echo "(a failure under CI: the README's set-up must install what every test needs)"
    exit 1
  fi
  exit 77
}
