#!/usr/bin/env bash
# The disk filling up under a run (issue 39, row 2), on a 16 MB tmpfs in a mount namespace of its
# own: a run that checkpoints, with the rest of the disk taken while it trains, and a run whose
# metrics fill the disk. Each must end with exit 1 and a summary.json that says the disk is full
# (the run folder keeps a reserve for it), metrics.jsonl must hold whole records only, and no
# temporary (.tmp-step-*, *.tmp.PID) may be left. Before: the process aborted (134) with no
# summary and a record cut in two. Weights that do not fit fail the run with its figures kept;
# a read-only --out is refused before anything runs; a file size limit is a full disk, and a
# closed stderr or a closed output pipe fail nothing.
# Skipped (77) where no mount namespace can be made (unshare -m needs root, unshare -rm user
# namespaces); under CI (CI=true) that is a failure instead (tests/lib/skip.sh).
#   disk_full_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
source "$(dirname "$0")/../lib/skip.sh"
if [ "${TROUPE_IN_MOUNTNS:-}" != 1 ]; then
  for flags in -m -rm; do
    if unshare $flags true 2>/dev/null; then
      TROUPE_IN_MOUNTNS=1 exec unshare $flags bash "$0" "$@"
    fi
  done
  skip "no mount namespace here (unshare -m needs root, unshare -rm user namespaces)"
fi
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"
disk="$tmp/disk"
mkdir -p "$disk"
mount -t tmpfs -o size=16m tmpfs "$disk" || skip "cannot mount a tmpfs in the namespace"

cat >"$tmp/job.json" <<'JSON'
{"name": "full", "seed": 1, "model": {"type": "mlp", "hidden": [256]},
 "data": {"type": "synthetic", "train_samples": 2048, "test_samples": 256},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 1500, "batch_size": 32, "eval_interval": 0},
 "parallelism": {"policy": "sync", "replicas": 2, "threads_per_replica": 1},
 "faults": {"slow_worker": 0, "slow_ms": 5}}
JSON

# full_and_whole WHAT DIR STATUS [ERROR]: exit 1, the summary naming the full disk (or ERROR),
# whole records, no temporaries.
full_and_whole() {
  local what=$1 dir=$2 status=$3
  export FULL_ERROR=${4:-No space left on device}
  [ "$status" -eq 1 ] && pass || fail "$what: exit $status, expected 1: $(tail -3 "$tmp/$what.log")"
  /usr/bin/python3 - "$dir" <<'PY' && pass || fail "$what: the summary or the records"
import json, sys
folder = sys.argv[1]
s = json.load(open(folder + "/summary.json"))
import os
ok = s["status"] == "failed" and os.environ["FULL_ERROR"] in s["error"]
for number, line in enumerate(open(folder + "/metrics.jsonl", "rb"), 1):
    if not line.endswith(b"\n"):
        print(f"metrics.jsonl line {number} is cut: {line[-80:]!r}")
        ok = False
    json.loads(line)
print("summary error:", s.get("error"))
sys.exit(0 if ok else 1)
PY
  local left
  left=$(find "$dir" -name '.tmp-step-*' -o -name '*.tmp.*')
  [ -z "$left" ] && pass || fail "$what: temporaries left: $left"
}

# A run that checkpoints; once it has one, the rest of the disk is taken.
start ckpt "$troupe" run "$tmp/job.json" --set checkpoint.every_steps=20 --set checkpoint.keep=2 \
  --out "$disk/ckpt" --quiet
pid=$last_pid
for _ in $(seq 300); do [ -d "$disk/ckpt/checkpoints/step-19" ] && break; sleep 0.1; done
[ -d "$disk/ckpt/checkpoints/step-19" ] && pass || fail "no first checkpoint: $(tail -3 "$tmp/ckpt.log")"
fallocate -l "$(($(df --output=avail -B1 "$disk" | tail -1) - 4096))" "$disk/filler" 2>/dev/null ||
  dd if=/dev/zero of="$disk/filler" bs=64k 2>/dev/null
finish $pid 120
full_and_whole ckpt "$disk/ckpt" $status
grep -qF "continue it with: troupe run --resume $disk/ckpt" "$tmp/ckpt.log" && pass ||
  fail "no resume hint: $(tail -3 "$tmp/ckpt.log")"
# With room again, the run continues from its last checkpoint to the end. Room for two more
# checkpoints (and a megabyte) is enough: the one or two there make way for the new ones (the
# check counted them as needing space again, and refused the resume with advice --resume cannot
# take: 3 checkpoints need 7.5 MB, more than the 5.9 MB free).
rm -f "$disk/filler"
each=$(du -sb "$(ls -d "$disk"/ckpt/checkpoints/step-* | head -1)" | cut -f1)
fallocate -l "$(($(df --output=avail -B1 "$disk" | tail -1) - 2 * each - (1 << 20)))" "$disk/filler"
expect 0 "succeeded: 1500 steps" -- "$troupe" run --resume "$disk/ckpt" --quiet
rm -f "$disk/filler"

# Metrics that fill the disk (no checkpoints): 300 KB left.
rm -rf "$disk/ckpt"
fallocate -l "$(($(df --output=avail -B1 "$disk" | tail -1) - 300 * 1024))" "$disk/filler"
start metrics "$troupe" run "$tmp/job.json" --out "$disk/metrics" --quiet \
  --set training.steps=200000 --set faults=null
finish $last_pid 120
full_and_whole metrics "$disk/metrics" $status

# Weights that do not fit (about 1 MB, 500 KB left): the run fails, naming them, and its summary
# keeps what it measured (it lost every figure: steps 0, no loss, no accuracy).
rm -rf "$disk/metrics" "$disk/filler"
fallocate -l "$(($(df --output=avail -B1 "$disk" | tail -1) - 500 * 1024))" "$disk/filler"
expect 1 "the weights could not be written" -- "$troupe" run "$tmp/job.json" --out "$disk/weights" \
  --quiet --set training.steps=20 --set faults=null
/usr/bin/python3 - "$disk/weights/summary.json" <<'PY' && pass || fail "weights: the summary lost its figures"
import json, sys
s = json.load(open(sys.argv[1]))
print(s["status"], s["steps"], s["final_train_loss"], s["error"])
assert s["status"] == "failed" and s["steps"] == 20 and s["final_train_loss"] is not None
assert "No space left on device" in s["error"] and "weights" not in s["outputs"]
PY
rm -f "$disk/filler"

# A read-only folder is refused before the plan (it failed at summary.json, after the training).
mkdir "$disk/ro"
mount --bind "$disk/ro" "$disk/ro" && mount -o remount,ro,bind "$disk/ro" &&
  expect 2 "--out $disk/ro: cannot write in this folder: Read-only file system" -- \
    "$troupe" run "$tmp/job.json" --out "$disk/ro" --quiet
umount "$disk/ro" 2>/dev/null

umount "$disk"

# A file size limit (ulimit -f) is a full disk for the run's files: SIGXFSZ killed troupe
# mid-record, with no summary.
(ulimit -f 400 && exec "$troupe" run "$tmp/job.json" --out "$tmp/fsize" --quiet \
  --set training.steps=200000 --set faults=null) >"$tmp/fsize.log" 2>&1
full_and_whole fsize "$tmp/fsize" $? "File too large"
# A closed stderr, or a pipe whose reader left, fails nothing: the first progress line failed
# the run and then aborted troupe; the pipe's SIGPIPE killed it mid-run.
"$troupe" run "$tmp/job.json" --out "$tmp/closed" --set training.steps=300 --set faults=null \
  2>&- >/dev/null
[ $? -eq 0 ] && grep -q '"succeeded"' "$tmp/closed/summary.json" && pass ||
  fail "a run with stderr closed did not succeed"
"$troupe" run "$tmp/job.json" --out "$tmp/piped" --set training.steps=3000 --set faults=null \
  2>&1 | head -1 >/dev/null
[ "${PIPESTATUS[0]}" -eq 0 ] && grep -q '"succeeded"' "$tmp/piped/summary.json" && pass ||
  fail "a run whose output pipe closed did not succeed"
report disk_full_test
