# What the shell tests that start troupe processes share; sourced, after `set -uo pipefail`.
# Gives: $tmp (a scratch folder, removed on exit), $pids (every process started, killed on
# exit, pass or fail), pass/fail counters, and for processes: free_port, listening_port,
# wait_for_line, start, finish, check, expect, require_fashion_mnist.

source "$(dirname "${BASH_SOURCE[0]}")/skip.sh"
tmp=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done
  wait 2>/dev/null
  if [ -n "${KEEP_TMP:-}" ]; then echo "kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
failures=0
passes=0
pass() { passes=$((passes + 1)); }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# require_fashion_mnist: ends the test as skipped (77) where Debian's dataset is missing.
require_fashion_mnist() {
  if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
    skip "Fashion-MNIST is not installed (scripts/install_deps.sh installs it)"
  fi
}

# PyTorch in Debian's python3 makes the test's files and checks troupe's outputs.
require_python_torch() {
  if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
    skip "needs /usr/bin/python3 with torch (scripts/install_deps.sh --tests installs it)"
  fi
}

# free_port: a port nothing listens on now, for what must not reach anyone. A coordinator
# listens on port 0 instead (listening_port): a port taken here and handed on can be taken by
# any socket opened in between (seen once: the coordinator could not listen on it).
free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

wait_for_line() {  # wait_for_line LOG PATTERN SECONDS
  local deadline=$((SECONDS + $3))
  while ! grep -qF -- "$2" "$1" 2>/dev/null && [ $SECONDS -lt "$deadline" ]; do sleep 0.1; done
  grep -qF -- "$2" "$1" 2>/dev/null
}

# listening_port LOG: sets $port to where the coordinator writing LOG, started with
# --listen HOST:0, says it listens (waiting up to 30 s for it to say so).
listening_port() {
  port=
  wait_for_line "$1" "listening on" 30 &&
    port=$(sed -n 's/.*listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$1" | head -1)
  [ -n "$port" ] || fail "no 'listening on' line in $1: $(tail -3 "$1")"
}

# start NAME COMMAND...: runs COMMAND in the background, output in $tmp/NAME.log, its pid in
# $last_pid. No `timeout` wrapper: signals in the tests must reach troupe itself; `finish`
# bounds every wait instead.
start() {
  local name=$1
  shift
  "$@" >"$tmp/$name.log" 2>&1 &
  pids+=($!)
  last_pid=$!
}

# finish PID SECONDS: waits for PID at most SECONDS; sets `status` (124 when it had to be killed).
finish() {
  local pid=$1 deadline=$((SECONDS + $2))
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt "$deadline" ]; do sleep 0.1; done
  if kill -0 "$pid" 2>/dev/null; then
    kill -9 "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    status=124
  else
    wait "$pid"
    status=$?
  fi
}

# check WHAT STATUS EXPECTED_STATUS LOG PATTERN: the status and a fixed string in the log.
check() {
  local what=$1 got=$2 want=$3 log=$4 pattern=$5
  if [ "$got" -ne "$want" ]; then
    fail "$what: exit $got, expected $want"$'\n'"$(tail -20 "$log")"
  elif [ -n "$pattern" ] && ! grep -qF -- "$pattern" "$log"; then
    fail "$what: $log lacks '$pattern'"$'\n'"$(tail -20 "$log")"
  else
    pass
  fi
}

# log_has WHAT LOG PATTERN: the log holds PATTERN (a fixed string).
log_has() {
  if grep -qF -- "$3" "$2"; then pass; else fail "$1: $2 lacks '$3'"$'\n'"$(tail -20 "$2")"; fi
}

# expect STATUS PATTERN -- COMMAND...: runs COMMAND (bounded), checks its exit status and that
# its output (stdout + stderr) contains PATTERN (a fixed string; empty matches anything).
expect() {
  local status=$1 pattern=$2
  shift 3
  local out
  out=$(timeout 120 "$@" 2>&1)
  local got=$?
  if [ "$got" -ne "$status" ]; then
    fail "$* -> exit $got, expected $status"$'\n'"$out"
  elif [ -n "$pattern" ] && ! grep -qF -- "$pattern" <<<"$out"; then
    fail "$* -> output lacks '$pattern'"$'\n'"$out"
  else
    pass
  fi
}

# reaches_accuracy JOB NAME FLOOR ARGS...: `troupe run JOB ARGS` into $tmp/NAME succeeds with a
# test accuracy above FLOOR.
reaches_accuracy() {
  local job=$1 name=$2 floor=$3
  shift 3
  timeout 200 "$troupe" run "$job" --out "$tmp/$name" --quiet "$@" >"$tmp/$name.log" 2>&1 ||
    { fail "$name: $(tail -3 "$tmp/$name.log")"; return; }
  /usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s['test_accuracy'] > float(sys.argv[2]) else 1)" \
    "$tmp/$name/summary.json" "$floor" && pass ||
    fail "$name: test accuracy $(grep -o '"test_accuracy": [0-9.]*' "$tmp/$name/summary.json")"
}

# resumes_bitwise JOB ARGS...: `troupe run JOB ARGS` killed with SIGKILL a moment after its
# first checkpoint and resumed ends with the final weights of the run never interrupted, byte
# for byte. ARGS must checkpoint (checkpoint.every_steps) and run long enough to be killed.
resumes_bitwise() {
  local job=$1
  shift
  timeout 200 "$troupe" run "$job" --out "$tmp/full" --quiet "$@" >/dev/null 2>&1 ||
    { fail "the uninterrupted run failed"; return; }
  "$troupe" run "$job" --out "$tmp/killed" --quiet "$@" >/dev/null 2>&1 &
  local pid=$!
  pids+=($pid)
  local deadline=$((SECONDS + 60))
  while [ ! -f "$tmp/killed/checkpoints/latest" ] && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
  sleep "0.$((RANDOM % 5))"
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  timeout 200 "$troupe" run --resume "$tmp/killed" --quiet >/dev/null 2>&1 || fail "--resume failed"
  cmp -s "$tmp/full/final_weights.pt" "$tmp/killed/final_weights.pt" && pass ||
    fail "weights differ after SIGKILL and --resume"
  grep -q '"event":"resumed"' "$tmp/killed/metrics.jsonl" && pass || fail "the run was not resumed"
}

# report NAME: the last line of a test script; its exit status.
report() {
  echo "$1: $passes passed, $failures failed"
  [ "$failures" -eq 0 ]
}
