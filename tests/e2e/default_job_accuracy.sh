#!/usr/bin/env bash
# The default job trains to at least 87% test accuracy (the README's promise).
#   default_job_accuracy.sh PATH/TO/troupe PATH/TO/fashion_mlp_sync.json
set -euo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
timeout 800 "$1" run "$2" --out "$tmp/run"
/usr/bin/python3 - "$tmp/run/summary.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
print(f"test accuracy {s['test_accuracy']:.4f}, {s['samples_per_s']:.0f} samples/s, {s['wall_s']:.1f} s")
sys.exit(0 if s["status"] == "succeeded" and s["test_accuracy"] >= 0.87 else 1)
PY
