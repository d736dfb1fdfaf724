#!/usr/bin/env bash
# End-to-end test of checkpoints and --resume with the real program: for sync, local_sgd, a
# schedule, a pipeline, a stacked ensemble and keep_best, a run killed with SIGKILL at a random
# step (after its first checkpoint) and resumed ends with final weights byte-for-byte equal to
# the run that was never interrupted; Ctrl-C writes a checkpoint where it stops and --resume
# continues from it; a coordinator (troupe run --local-nodes) killed mid-run resumes too; a
# flipped byte in the newest checkpoint is skipped, saying so; async resumes and completes;
# a checkpoint's weights.pt loads in PyTorch; bad --resume command lines are refused (exit 2).
# Every process is bounded in time and killed on exit.
#   checkpoint_test.sh PATH/TO/troupe CONFIG(synthetic)
set -uo pipefail
troupe=$1
config=$2
source "$(dirname "$0")/../lib/harness.sh"

# A short job slowed down (one replica sleeps 4 ms a step) so that kills land mid-run; the
# ensemble, which takes no fault injection, runs more steps instead.
base=(--set training.steps=240 --set training.eval_interval=60 --set checkpoint.every_steps=25
      --set checkpoint.keep=2)
slow=(--set faults.slow_worker=0 --set faults.slow_ms=4)

# run_full NAME SETS...: the uninterrupted run, in $tmp/NAME-full.
run_full() {
  local name=$1
  shift
  timeout 120 "$troupe" run "$config" --out "$tmp/$name-full" --quiet "${base[@]}" "${slow[@]}" "$@" \
    >"$tmp/$name-full.log" 2>&1 || fail "$name: the uninterrupted run failed: $(tail -3 "$tmp/$name-full.log")"
}

# wait_for_checkpoint DIR SECONDS: until DIR holds a checkpoint (or the time is up).
wait_for_checkpoint() {
  local deadline=$((SECONDS + $2))
  while [ ! -f "$1/checkpoints/latest" ] && [ $SECONDS -lt "$deadline" ]; do sleep 0.05; done
}

# wait_for_steps DIR N SECONDS: until DIR's metrics record N steps (or the time is up).
wait_for_steps() {
  local deadline=$((SECONDS + $3))
  local steps
  while steps=$(grep -c '"event":"step"' "$1/metrics.jsonl" 2>/dev/null); [ "${steps:-0}" -lt "$2" ] &&
    [ $SECONDS -lt "$deadline" ]; do sleep 0.05; done
}

# kill_and_resume NAME SIGNAL EXTRA_ARGS SETS...: starts the run, sends SIGNAL a random moment
# after its first checkpoint (SIGINT: after its first 30 steps), resumes it, and compares every
# weights file with NAME-full's.
kill_and_resume() {
  local name=$1 signal=$2 extra=$3
  shift 3
  local dir="$tmp/$name"
  # shellcheck disable=SC2086
  "$troupe" run "$config" --out "$dir" --quiet "${base[@]}" "${slow[@]}" "$@" $extra >"$dir.log" 2>&1 &
  local pid=$!
  pids+=($pid)
  if [ "$signal" = INT ]; then wait_for_steps "$dir" 30 60; else wait_for_checkpoint "$dir" 60; fi
  sleep "0.$((RANDOM % 4))$((RANDOM % 10))"
  kill -"$signal" "$pid" 2>/dev/null
  wait "$pid" 2>/dev/null
  local killed=$?
  if [ $killed -eq 0 ]; then
    echo "note: $name finished before the $signal; nothing to resume"
  elif [ "$signal" = INT ]; then  # a stop asked for, not a failure: the shells' 128 + SIGINT
    [ $killed -eq 130 ] && pass || fail "$name: Ctrl-C ended it with exit $killed, not 130"
  fi
  # shellcheck disable=SC2086
  timeout 120 "$troupe" run --resume "$dir" --quiet $extra >>"$dir.log" 2>&1 ||
    { fail "$name: --resume failed: $(tail -5 "$dir.log")"; return; }
  local same=1
  for f in "$tmp/$name-full"/*.pt; do
    cmp -s "$f" "$dir/$(basename "$f")" || { same=0; fail "$name: $(basename "$f") differs after $signal and --resume"; }
  done
  [ $same = 1 ] && pass
}

# ---- bitwise resume after SIGKILL, per policy -------------------------------------------------
declare -A sets
sets[sync]=""
sets[local_sgd]="parallelism.policy=local_sgd parallelism.period=4 parallelism.replicas=3"
# Compressed averages travel against the last average: a resume must stand on it too.
sets[local_sgd_int8]='parallelism.policy=local_sgd parallelism.period=4 parallelism.replicas=3 parallelism.compression=int8 parallelism.outer_optimizer={"type":"sgd","lr":0.7,"momentum":0.9,"nesterov":true}'
sets[schedule]='parallelism={"policy":"schedule","replicas":2,"phases":[{"policy":"sync","steps":100},{"policy":"local_sgd","period":5}]}'
sets[pipeline]='parallelism.replicas=2 parallelism.stages=2 parallelism.micro_batches=2 model.hidden=[64,32]'
# The ensemble takes no fault injection: more steps keep it running long enough.
sets[ensemble]="ensemble.members=3 parallelism.replicas=1 training.steps=3000"
sets[keep_best]="data.validation=0.1 training.keep_best=true optimizer.type=adamw"
for name in sync local_sgd local_sgd_int8 schedule pipeline ensemble keep_best; do
  args=()
  for s in ${sets[$name]}; do args+=(--set "$s"); done
  [ "$name" = keep_best ] && args=(--set data.validation=0.1 --set training.keep_best=true
                                   --set 'optimizer={"type":"adamw","lr":0.001,"momentum":null}')
  saved_slow=("${slow[@]}")
  [ "$name" = ensemble ] && slow=()
  run_full "$name" "${args[@]}"
  kill_and_resume "$name" 9 "" "${args[@]}"
  slow=("${saved_slow[@]}")
done
grep -q '"event":"resumed"' "$tmp/sync/metrics.jsonl" && pass || fail "no resumed record"
# The resume stands on the run's clock, where its checkpoint left it (it said t 0).
/usr/bin/python3 - "$tmp/sync/metrics.jsonl" <<'PY' && pass || fail "the resumed record's time"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
at = max(k for k, r in enumerate(records) if r["event"] == "resumed")
before = [r["t"] for r in records[:at] if r["event"] == "step"]
after = [r["t"] for r in records[at + 1:] if r["event"] == "step"]
print("resumed at t", records[at]["t"], "steps before from", before[0], "the next at", after[0])
assert before[0] <= records[at]["t"] <= after[0]
PY

# ---- Ctrl-C: a checkpoint where the run stops --------------------------------------------------
# Without periodic checkpoints: the one Ctrl-C writes is the first (the same weights as sync's).
cp -r "$tmp/sync-full" "$tmp/sync_int-full"
kill_and_resume sync_int INT "" --set checkpoint.every_steps=0
grep -qE "interrupted after [0-9]+ steps?" "$tmp/sync_int.log" && pass || fail "Ctrl-C: $(head -5 "$tmp/sync_int.log")"
grep -qF "continue it with: troupe run --resume" "$tmp/sync_int.log" && pass || fail "Ctrl-C: no hint"

# ---- the coordinator of a run across processes, killed and resumed ------------------------------
run_full nodes --local-nodes 2
kill_and_resume nodes 9 "--local-nodes 2"

# A checkpoint part crosses processes whole: a replica's weights and Adam's two moments, for a
# model of 1.9 M parameters (22 MB), must pass the connections' frame limit.
out=$(timeout 120 "$troupe" run "$config" --out "$tmp/big_nodes" --quiet --local-nodes 2 \
  --set 'model.hidden=[1024,1024]' --set 'optimizer={"type":"adam","lr":0.001,"momentum":null}' \
  --set parallelism.policy=local_sgd --set training.steps=12 --set checkpoint.every_steps=5 2>&1)
[ $? -eq 0 ] && [ -f "$tmp/big_nodes/checkpoints/step-9/state.pt" ] && pass ||
  fail "Adam checkpoint of a large model across nodes: $out"

# ---- a flipped byte in the newest checkpoint is skipped ---------------------------------------
dir="$tmp/flip"
timeout 120 "$troupe" run "$config" --out "$dir" --quiet "${base[@]}" >/dev/null 2>&1
rm -f "$dir"/*.pt "$dir/summary.json"
# What a SIGKILL during the final write leaves (pid 4194304 is beyond Linux's pid_max): --resume
# removes it.
echo torn >"$dir/final_weights.pt.tmp.4194304"
newest=$(cat "$dir/checkpoints/latest")
/usr/bin/python3 - "$dir/checkpoints/$newest/state.pt" <<'PY'
import sys
data = bytearray(open(sys.argv[1], "rb").read())
data[len(data) // 2] ^= 1
open(sys.argv[1], "wb").write(data)
PY
out=$(timeout 120 "$troupe" run --resume "$dir" --quiet 2>&1)
[ $? -eq 0 ] && pass || fail "flipped byte: resume failed: $out"
grep -qF "checkpoint $newest skipped: state.pt: its SHA-256 differs" <<<"$out" && pass ||
  fail "flipped byte: not reported: $out"
cmp -s "$tmp/sync-full/final_weights.pt" "$dir/final_weights.pt" && pass ||
  fail "flipped byte: the run from the checkpoint before differs"
[ ! -e "$dir/final_weights.pt.tmp.4194304" ] && pass || fail "--resume left a torn temporary"

# ---- Ctrl-C during start-up (the run folder exists, the data loads): summary.json, exit 130 -----
dir="$tmp/startup_int"
timeout 120 "$troupe" run "$config" --out "$dir" --quiet "${base[@]}" >"$dir.log" 2>&1 &
pid=$!
pids+=("$pid")
deadline=$((SECONDS + 60))
while [ ! -f "$dir/job.json" ] && [ $SECONDS -lt $deadline ]; do sleep 0.005; done
kill -INT "$pid"
wait "$pid"
status=$?
[ $status -eq 130 ] && grep -qF "(stopped by an interrupt)" "$dir.log" && /usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["status"]=="failed" and "interrupted" in s["error"] else 1)' \
  "$dir/summary.json" && pass || fail "Ctrl-C at start-up: exit $status, $(cat "$dir.log" "$dir/summary.json")"

# ---- async: the server's state resumes, the run completes --------------------------------------
kill_and_resume_async() {
  local dir="$tmp/async"
  "$troupe" run "$config" --out "$dir" --quiet "${base[@]}" "${slow[@]}" --set parallelism.policy=async \
    >"$dir.log" 2>&1 &
  local pid=$!
  pids+=($pid)
  wait_for_checkpoint "$dir" 60
  kill -9 "$pid"
  wait "$pid" 2>/dev/null
  timeout 120 "$troupe" run --resume "$dir" --quiet >>"$dir.log" 2>&1 && pass ||
    fail "async: --resume failed: $(tail -5 "$dir.log")"
  /usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); assert s['status']=='succeeded' and s['steps']==240, s" \
    "$dir/summary.json" && pass || fail "async: summary after resume"
}
kill_and_resume_async

# ---- a schedule resumed at the last step of a phase records the switch again -------------------
# Its checkpoint follows step 24, the sync phase's last; the switch to local_sgd was recorded
# before it, among the records the resume supersedes. A worker's fault at step 30 fails the run
# after that checkpoint, and the resumed one again (exit 1 both times).
dir=$tmp/phase_resume
phases='parallelism={"policy":"schedule","replicas":2,"phases":[{"policy":"sync","steps":25},{"policy":"local_sgd","period":5}]}'
timeout 120 "$troupe" run "$config" --out "$dir" --quiet "${base[@]}" --set "$phases" \
  --set faults.throw_worker=0 --set faults.throw_step=30 >"$dir.log" 2>&1
[ $? -eq 1 ] && pass || fail "phase resume: the first run did not fail at its fault"
timeout 120 "$troupe" run --resume "$dir" --quiet >>"$dir.log" 2>&1
[ $? -eq 1 ] && pass || fail "phase resume: the resumed run did not fail at its fault"
/usr/bin/python3 - "$dir/metrics.jsonl" <<'PY' && pass || fail "phase resume: no switch recorded after the resume"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
resumed = max(k for k, r in enumerate(records) if r["event"] == "resumed")
assert records[resumed]["step"] == 24, records[resumed]
phases = [(r["step"], r["policy"]) for r in records[resumed:] if r["event"] == "phase"]
assert phases == [(25, "local_sgd")], phases
PY

# ---- a checkpoint's weights.pt loads in PyTorch ------------------------------------------------
/usr/bin/python3 - "$tmp/sync" <<'PY' && pass || fail "a checkpoint's weights.pt does not load"
import json, sys, torch
run = sys.argv[1]
newest = open(f"{run}/checkpoints/latest").read().strip()
weights = torch.load(f"{run}/checkpoints/{newest}/weights.pt", weights_only=True)
final = torch.load(f"{run}/final_weights.pt", weights_only=True)
assert list(weights) == list(final), (list(weights), list(final))
assert all(weights[k].shape == final[k].shape for k in final)
manifest = json.load(open(f"{run}/checkpoints/{newest}/manifest.json"))
assert sorted(f["name"] for f in manifest["files"]) == ["state.json", "state.pt", "weights.pt"]
PY

# ---- bad command lines -------------------------------------------------------------------------
expect_usage() {
  local what=$1 pattern=$2
  shift 2
  local out
  out=$(timeout 30 "$troupe" "$@" 2>&1)
  local status=$?
  if [ $status -ne 2 ]; then
    fail "$what: exit $status, expected 2: $out"
  elif ! grep -qF -- "$pattern" <<<"$out"; then
    fail "$what: no '$pattern' in: $out"
  else
    pass
  fi
}
mkdir -p "$tmp/empty"
expect_usage "resume an empty folder" "--resume $tmp/empty: not the folder of a run" \
  run --resume "$tmp/empty"
cp "$tmp/sync-full/job.json" "$tmp/empty/"
expect_usage "resume without checkpoints" "--resume $tmp/empty: the run wrote no checkpoint" \
  run --resume "$tmp/empty"
mkdir -p "$tmp/empty/checkpoints"
expect_usage "resume without a checkpoint that verifies" \
  "no checkpoint in $tmp/empty/checkpoints verifies" run --resume "$tmp/empty"
# Resumed without its nodes, it says how to give them.
expect_usage "resume across nodes without them" \
  "runs with troupe run --resume $tmp/nodes --local-nodes 2, or troupe coordinator --resume" \
  run --resume "$tmp/nodes"
expect_usage "resume a missing folder" "not a run folder (no such folder)" run --resume "$tmp/nowhere"
expect_usage "resume with a job file" "excludes" run "$config" --resume "$tmp/sync"
expect_usage "resume with --set" "give no job file and no --set" \
  run --resume "$tmp/sync" --set optimizer.lr=1
expect_usage "neither a job nor --resume" "a job file (or --resume DIR)" run
# A state.json edited by hand with its manifest rewritten to match: refused before the run (it
# failed the run, exit 1, and invited another --resume; a count of 1e30 became -2^63).
forge() {  # forge RUN PYTHON: edits the newest checkpoint's state.json, then its manifest
  cp -r "$tmp/sync" "$1"
  /usr/bin/python3 - "$1" "$2" <<'PY'
import hashlib, json, os, sys
run, edit = sys.argv[1], sys.argv[2]
folder = os.path.join(run, "checkpoints", open(os.path.join(run, "checkpoints", "latest")).read().strip())
state = json.load(open(os.path.join(folder, "state.json")))
exec(edit)
text = json.dumps(state).encode()
open(os.path.join(folder, "state.json"), "wb").write(text)
manifest = json.load(open(os.path.join(folder, "manifest.json")))
for f in manifest["files"]:
    if f["name"] == "state.json":
        f["size"], f["sha256"] = len(text), hashlib.sha256(text).hexdigest()
json.dump(manifest, open(os.path.join(folder, "manifest.json"), "w"))
PY
}
forge "$tmp/forged_huge" 'state["progress"]["tracker"]["rows_per_epoch"] = [1e30]'
expect_usage "a count of 1e30 in state.json" "state.json's progress is not what troupe writes (rows_per_epoch/0: 1e+30 is not a count)" \
  run --resume "$tmp/forged_huge"
# A loss beyond int64's range is a figure (a regression on targets of 1e10), not a forgery: its
# checkpoint resumes (it was refused as a count).
forge "$tmp/forged_loss" 'state["progress"]["tracker"]["last_loss"] = 1e21; state["progress"]["tracker"]["recent_losses"] = [1e21, 2e21]'
out=$(timeout 120 "$troupe" run --resume "$tmp/forged_loss" --quiet 2>&1) &&
  pass || fail "a checkpoint whose loss is 1e21 should resume: $out"
forge "$tmp/forged_type" 'state["progress"]["tracker"]["completed_steps"] = "many"'
expect_usage "a string for a count in state.json" "state.json's progress is not what troupe writes" \
  run --resume "$tmp/forged_type"

report checkpoint_test
