#!/usr/bin/env bash
# End-to-end tests of what a new user met first (issue 20): `troupe help`; --set as a merge patch
# (a length given with --set replaces the file's other length); the plan made from the data
# files' headers and a missing data folder refused by validate; the preprocessing written beside
# the weights; the plan before the progress in one log; one step-count wording; an existing
# --out refused before the plan; "did you mean" for unknown keys, blaming the --set that wrote
# them; the optimizer line; a progress line that fits the terminal; a suite's live view and its
# jobs' logs, each job named by the setting it sweeps (live-seed=1); Ctrl-C's exit status (130)
# and how to continue.
#   new_user_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$(dirname "$0")/../lib/harness.sh"

# lacks PATTERN -- COMMAND...: COMMAND's output does not contain PATTERN (any exit status).
lacks() {
  local pattern=$1
  shift 2
  local out
  out=$(timeout 120 "$@" 2>&1)
  grep -qF -- "$pattern" <<<"$out" && fail "$* -> output has '$pattern'"$'\n'"$out" || pass
}

# A small Fashion-MNIST-shaped IDX folder: 5,000 training and 1,000 test images (random pixels).
/usr/bin/python3 - "$tmp/idx" <<'PY'
import gzip, os, random, struct, sys
folder = sys.argv[1]
os.makedirs(folder)
rng = random.Random(1)
for split, n in (("train", 5000), ("t10k", 1000)):
    with gzip.open(f"{folder}/{split}-images-idx3-ubyte.gz", "wb", compresslevel=1) as f:
        f.write(struct.pack(">iiii", 0x803, n, 28, 28) + os.urandom(n * 28 * 28))
    with gzip.open(f"{folder}/{split}-labels-idx1-ubyte.gz", "wb", compresslevel=1) as f:
        f.write(struct.pack(">ii", 0x801, n) + bytes(rng.randrange(10) for _ in range(n)))
PY
cat >"$tmp/fashion.json" <<JSON
{"name": "small", "data": {"type": "fashion_mnist", "path": "$tmp/idx"},
 "model": {"hidden": [16]}, "optimizer": {"type": "sgd", "lr": 0.02, "momentum": 0.9},
 "training": {"epochs": 8, "batch_size": 128, "eval_interval": 0}}
JSON
cat >"$tmp/synthetic.json" <<'JSON'
{"name": "syn", "data": {"type": "synthetic", "train_samples": 1024, "test_samples": 128},
 "model": {"hidden": [16]}, "training": {"epochs": 2, "batch_size": 32, "eval_interval": 10}}
JSON

# --- 9: help -------------------------------------------------------------------------------
expect 0 "validate" -- "$troupe" help
expect 0 "--set" -- "$troupe" help run
expect 2 "no subcommand bogus" -- "$troupe" help bogus
expect 2 "Subcommands" -- "$troupe"

# --- 1: --set is a merge patch; a length given with --set replaces the other ---------------
expect 0 "training: 50 steps" -- "$troupe" validate "$tmp/fashion.json" --set training.steps=50
expect 0 "training: 39 steps (39 per epoch)" -- "$troupe" validate "$tmp/fashion.json" \
  --set 'training={"steps": 20}' --set training.epochs=1
expect 0 "of global batch 128" -- "$troupe" validate "$tmp/fashion.json" \
  --set 'training={"steps": 20}'
expect 0 "training: 20 steps" -- "$troupe" validate "$tmp/fashion.json" \
  --set 'training={"steps": 20, "eval_interval": null}'
echo '{"training": {"epochs": 1, "steps": 5}}' >"$tmp/both.json"
expect 2 "/training: give either epochs or steps, not both (" -- "$troupe" validate "$tmp/both.json"
expect 2 "--set training.steps=N" -- "$troupe" validate "$tmp/both.json"
expect 0 "training: 5 steps" -- "$troupe" validate "$tmp/both.json" --set training.epochs=null
if [ -d /usr/share/datasets/fashion-mnist ]; then
  expect 0 "training: 50 steps" -- "$troupe" validate "$root/configs/fashion_mlp_sync.json" \
    --set training.steps=50
fi

# --- 3: the plan from the files' headers; a missing folder refused ---------------------------
expect 0 "fashion_mnist, 5000 training samples, 1000 test samples" -- "$troupe" validate \
  "$tmp/fashion.json"
expect 0 "training: 312 steps (39 per epoch)" -- "$troupe" validate "$tmp/fashion.json"
expect 2 "/nonexistent/train-images-idx3-ubyte.gz" -- "$troupe" validate "$tmp/fashion.json" \
  --set data.path=/nonexistent

# --- 9: the optimizer line; unknown keys -----------------------------------------------------
expect 0 "optimizer: sgd, lr 0.02, momentum 0.9;" -- "$troupe" validate "$tmp/fashion.json"
expect 0 "momentum 0.9, weight decay 0.0005" -- "$troupe" validate "$tmp/fashion.json" \
  --set optimizer.weight_decay=0.0005
expect 2 "error: --set optimizer.momentun=0.5: /optimizer/momentun: unknown key (did you mean \"momentum\"?" \
  -- "$troupe" validate "$tmp/fashion.json" --set optimizer.momentun=0.5
expect 2 "error: --set training={\"stepz\": 3}: /training/stepz: unknown key (did you mean \"steps\"?" \
  -- "$troupe" validate "$tmp/fashion.json" --set 'training={"stepz": 3}'
# A problem in an object a --set made is that --set's, not the file's; a key twice in a value is
# refused as in a file (the last won, silently).
expect 2 "error: --set nope.x=1: /nope: unknown key" -- "$troupe" validate "$tmp/fashion.json" \
  --set nope.x=1
expect 2 "error: --set training.early_stopping.metric=validation_loss: /training/early_stopping:" \
  -- "$troupe" validate "$tmp/fashion.json" --set training.early_stopping.metric=validation_loss
expect 2 "/steps: given twice in the same object" -- "$troupe" validate "$tmp/fashion.json" \
  --set 'training={"steps": 20, "steps": 30}'
# The plan's refusals name their --set too (they named nothing), and so does a problem of the
# object above a --set's key that names that key.
expect 2 'error: --set parallelism={"stages": 64}: /parallelism/stages: 64 stages' -- \
  "$troupe" validate "$tmp/fashion.json" --set 'parallelism={"stages": 64}'
expect 2 "error: --set training.clip_grad_value=1: /training: give clip_grad_norm or" -- \
  "$troupe" validate "$tmp/fashion.json" --set training.clip_grad_norm=1 \
  --set training.clip_grad_value=1
echo '{"optimizer": {"lrr": 0.1}}' >"$tmp/typo.json"
expect 2 "$tmp/typo.json: /optimizer/lrr: unknown key (did you mean \"lr\"?" -- "$troupe" validate \
  "$tmp/typo.json"
# An object --set merges into the file's object: a bad key beside its keys is still the file's.
expect 2 "error: $tmp/typo.json: /optimizer/lrr: unknown key" -- "$troupe" validate \
  "$tmp/typo.json" --set 'optimizer={"lr": 0.2}'
# A value that begins as JSON and breaks is named where it breaks, not taken as a string.
expect 2 "error: --set model={\"type\":: the value:1:9: invalid JSON" -- "$troupe" validate \
  "$tmp/typo.json" --set 'model={"type":'

# --- 9: an existing --out is refused before the plan ----------------------------------------
mkdir -p "$tmp/taken" && touch "$tmp/taken/x"
expect 2 "not empty" -- "$troupe" run "$tmp/synthetic.json" --out "$tmp/taken"
lacks "training:" -- "$troupe" run "$tmp/synthetic.json" --out "$tmp/taken"

# --- 2: the preprocessing in job.json and summary.json ---------------------------------------
expect 0 "succeeded" -- "$troupe" run "$tmp/fashion.json" --out "$tmp/run_pre" \
  --set training.steps=3 --quiet
/usr/bin/python3 - "$tmp/run_pre" <<'PY' && pass || fail "preprocessing in job.json/summary.json"
import json, sys
run = sys.argv[1]
job = json.load(open(f"{run}/job.json"))
summary = json.load(open(f"{run}/summary.json"))
p = job["data"]["preprocessing"]
assert p == summary["preprocessing"], (p, summary)
assert p["formula"] == "(x/255 - 0.2860)/0.3530", p
assert (p["scale"], p["mean"], p["std"]) == (1 / 255, 0.286, 0.353), p
PY
# The resolved job runs again as it is; another preprocessing is refused, not ignored.
expect 0 "valid" -- "$troupe" validate "$tmp/run_pre/job.json"
expect 2 "/data/preprocessing: states what troupe does to every image" -- "$troupe" validate \
  "$tmp/run_pre/job.json" --set data.preprocessing.mean=0.5
grep -qF "(x/255 - 0.2860)/0.3530" "$root/README.md" && pass || fail "README lacks the preprocessing"
# Where the program is, and the install and package commands (e2e.install runs them both).
grep -qF 'The program is `build/apps/troupe`' "$root/README.md" &&
  grep -qF "cmake --install build --prefix ~/.local" "$root/README.md" &&
  grep -qF "cpack -G DEB" "$root/README.md" && pass || fail "README lacks where troupe is, or how to install it"

# --- 5 and 6: one log holds the plan, then the progress; steps counted ----------------------
"$troupe" run "$tmp/synthetic.json" --out "$tmp/run_log" >"$tmp/run.log" 2>&1
plan_line=$(grep -n "^  training: " "$tmp/run.log" | head -1 | cut -d: -f1)
progress_line=$(grep -n "^epoch " "$tmp/run.log" | head -1 | cut -d: -f1)
[ -n "$plan_line" ] && [ -n "$progress_line" ] && [ "$plan_line" -lt "$progress_line" ] && pass ||
  fail "the plan is not before the progress in the log:"$'\n'"$(cat "$tmp/run.log")"
grep -qF "succeeded: 64 steps" "$tmp/run.log" && grep -qF "step 64/64" "$tmp/run.log" && pass ||
  fail "steps counted: $(cat "$tmp/run.log")"
/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["steps"]==64 else 1)' \
  "$tmp/run_log/summary.json" && pass || fail "summary.json steps"

# --- 4: on an 60-column terminal every progress line fits --------------------------------------
if script -qec true /dev/null >/dev/null 2>&1; then
  script -qec "stty cols 60 rows 20; '$troupe' run '$tmp/synthetic.json' --out '$tmp/run_tty' \
    --set training.epochs=20 --set 'faults={\"slow_worker\": 0, \"slow_ms\": 2}'" \
    /dev/null >"$tmp/tty.log" 2>&1
  /usr/bin/python3 - "$tmp/tty.log" <<'PY' && pass || fail "progress lines wider than 59 columns"
import re, sys
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
pieces = [p for line in text.split("\n") for p in line.split("\r") if "step " in p and "/" in p]
progress = [p for p in pieces if re.search(r"step \d+/\d+ loss", p)]
assert progress, text[-2000:]
too_wide = [p for p in progress if len(p) > 59]
assert not too_wide, too_wide[:3]
PY
else
  echo "SKIP: no script(1) to give troupe a terminal"
fi

# --- 7: a suite's live view and its jobs' logs, the jobs named by their settings ---------------
cat >"$tmp/suite.json" <<'JSON'
{"name": "live", "data": {"type": "synthetic", "train_samples": 1024, "test_samples": 128},
 "model": {"hidden": [16]}, "training": {"steps": 60, "batch_size": 32, "eval_interval": 20},
 "faults": {"slow_worker": 0, "slow_ms": 40},
 "sweep": {"seed": [1, 2]}, "devices": [{"device": "cpu", "threads": 2}]}
JSON
expect 0 "  live-seed=1: running step " -- "$troupe" run "$tmp/suite.json" --out "$tmp/suite"
lines=$(grep -c "step [0-9]*/60 loss" "$tmp/suite/logs/live-seed=1.log")
[ "$lines" -ge 3 ] && pass ||
  fail "live-seed=1.log holds $lines progress lines: $(cat "$tmp/suite/logs/live-seed=1.log")"
if script -qec true /dev/null >/dev/null 2>&1; then
  script -qec "'$troupe' run '$tmp/suite.json' --out '$tmp/suite_tty'" /dev/null >"$tmp/suite_tty.log" 2>&1
  grep -qE "job +status +step +loss +accuracy" "$tmp/suite_tty.log" &&
    grep -qE "live-seed=2 +succeeded +60/60" "$tmp/suite_tty.log" && pass ||
    fail "no live table on a terminal: $(tail -c 1500 "$tmp/suite_tty.log")"
fi

# Ctrl-C is a stop the user asked for, not a failure: exit 130, what happened, how to go on.
start stopped "$troupe" run "$root/configs/synthetic_smoke.json" --set training.steps=1000000 \
  --out "$tmp/stopped" --quiet
wait_for_line "$tmp/stopped/metrics.jsonl" '"event":"step"' 60 || fail "the run took no step"
kill -INT "$last_pid"
finish "$last_pid" 60
check "Ctrl-C" "$status" 130 "$tmp/stopped.log" "(stopped by an interrupt)"
grep -qF "continue it with: troupe run --resume $tmp/stopped" "$tmp/stopped.log" && pass ||
  fail "Ctrl-C: no way to continue named: $(cat "$tmp/stopped.log")"

report new_user_test
