#!/usr/bin/env bash
# async with a straggler on Fashion-MNIST: with max_staleness 2 and replica 1 slowed by about
# a step's time, the run reaches the accuracy floor, only the fast replica is ever held back, it
# pushes at least as many gradients as the straggler, and no gradient is staler than the bound
# allows ((replicas - 1)(2s + 1) = 5).
#   async_straggler.sh PATH/TO/troupe PATH/TO/fashion_mlp_sync.json
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timeout 600 "$1" run "$2" --out "$tmp/run" --quiet \
  --set 'parallelism={"policy": "async", "max_staleness": 2, "replicas": 2}' \
  --set 'faults={"slow_worker": 1, "slow_ms": 12}' --set training.epochs=1
/usr/bin/python3 - "$tmp/run" <<'PY'
import json, sys
run = sys.argv[1]
s = json.load(open(f"{run}/summary.json"))
fast, slow = s["workers"]
histogram = {int(k): v for k, v in s["staleness_histogram"].items()}
print(f"accuracy {s['test_accuracy']:.4f}, pushes fast {fast['steps']} slow {slow['steps']}, "
      f"wait fraction fast {fast['wait_fraction']:.3f} slow {slow['wait_fraction']:.3f}, "
      f"staleness {histogram}")
assert s["status"] == "succeeded", s
assert s["test_accuracy"] >= 0.82, "accuracy floor"
assert slow["wait_s"] == 0, "the straggler is never held back"
assert fast["steps"] >= slow["steps"], "the fast replica does at least its share"
assert max(histogram) <= 5 and sum(histogram.values()) == 2 * s["steps"], histogram
waits = [json.loads(l) for l in open(f"{run}/metrics.jsonl") if '"waited"' in l]
assert waits and all(w["worker"] == 0 for w in waits), "recorded waits are the fast replica's"
PY
