#!/usr/bin/env bash
# End-to-end test of the training essentials on Fashion-MNIST, with the shipped
# configs/fashion_mlp_tuned.json (warm-up + cosine, clipping, a validation split, early stopping,
# keep_best): the run stops within `patience` evaluations of its last improvement, never
# evaluates the test set before the end, records the scheduled rates, and its best_weights.pt,
# re-evaluated in PyTorch on the rows validation_rows.json names, gives the figure summary.json
# reports (and the test accuracy on the test set).
#   validation_test.sh PATH/TO/troupe CONFIG
set -uo pipefail
troupe=$1
config=$2
here=$(cd "$(dirname "$0")" && pwd)
source "$(dirname "$0")/../lib/harness.sh"
fashion=/usr/share/datasets/fashion-mnist

require_fashion_mnist

out=$(timeout 300 "$troupe" run "$config" --out "$tmp/run" --quiet --set training.eval_interval=100 2>&1)
[ $? -eq 0 ] && pass || fail "run: $out"
grep -qE "stopped early after [0-9]+ steps?" <<<"$out" && pass || fail "no early stop in: $out"

/usr/bin/python3 - "$tmp/run" <<'PY' && pass || fail "metrics and summary of the early-stopped run"
import json, sys
run = sys.argv[1]
job = json.load(open(f"{run}/job.json"))
summary = json.load(open(f"{run}/summary.json"))
events = [json.loads(line) for line in open(f"{run}/metrics.jsonl")]
evals = [e for e in events if e["event"] == "eval"]
# The test set: evaluated exactly once, last, on the best weights.
tests = [e for e in evals if "test_accuracy" in e]
assert len(tests) == 1 and evals[-1] is tests[0], tests
assert tests[0]["weights"] == "best", tests[0]
assert abs(tests[0]["test_accuracy"] - summary["test_accuracy"]) < 1e-12
validations = [e for e in evals if "validation_accuracy" in e]
assert validations and all("test_accuracy" not in e for e in validations)
# Early stopping: the last evaluation that improved by more than min_delta is `patience`
# evaluations before the one training stopped after.
rule = job["training"]["early_stopping"]
best, last_improving = None, None
for i, e in enumerate(validations):
    if best is None or e["validation_accuracy"] > best + rule["min_delta"]:
        best, last_improving = e["validation_accuracy"], i
assert len(validations) - 1 - last_improving == rule["patience"], (len(validations), last_improving)
assert summary["stopped_early_at"] == validations[-1]["step"]
steps = [e for e in events if e["event"] == "step"]
assert steps[-1]["step"] < summary["steps"] + 1 and summary["steps"] < 8 * 421
# keep_best: the highest validation accuracy's step and figure.
top = max(validations, key=lambda e: e["validation_accuracy"])
assert summary["best"] == {"step": top["step"], "metric": "validation_accuracy",
                           "value": top["validation_accuracy"]}, summary["best"]
# The schedule: warm-up from lr x start_factor, then cosine down.
o = job["optimizer"]
start = o["lr"] * o["schedule"]["warmup_start_factor"]
assert abs(steps[0]["lr"] - start) < 1e-12, steps[0]
assert abs(steps[200]["lr"] - o["lr"]) < 1e-12, steps[200]
assert steps[400]["lr"] < o["lr"]
PY

/usr/bin/python3 "$here/../python/check_weights.py" "$tmp/run" --best --evaluate "$fashion" \
  >"$tmp/check.log" 2>&1 && pass || fail "best weights in PyTorch: $(cat "$tmp/check.log")"

# A validation split that leaves less than a batch, and watching without a validation set,
# are refused before anything runs.
out=$(timeout 60 "$troupe" validate "$config" --set data.validation=59950 2>&1)
[ $? -eq 2 ] && grep -qF "/data/validation: holds out 59950 of the 60000 training rows" <<<"$out" &&
  pass || fail "validation too large: $out"
out=$(timeout 60 "$troupe" validate "$config" --set data.validation=0 2>&1)
[ $? -eq 2 ] && grep -qF "/training/early_stopping: watches the validation figures" <<<"$out" &&
  pass || fail "early stopping without validation: $out"
out=$(timeout 60 "$troupe" validate "$config" --set data.validation=1.5 2>&1)
[ $? -eq 2 ] && grep -qF "/data/validation: must be a fraction in (0, 1) or a whole number" <<<"$out" &&
  pass || fail "fractional count: $out"

report validation_test
