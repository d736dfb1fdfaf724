#!/usr/bin/env bash
# examples/your_model as the README walks through it: make_model.py writes the scripted
# ResNet-style CNN and Fashion-MNIST as tensor files, troupe trains the example's job (cut to
# 100 steps), and use_model.py finds in PyTorch the accuracy summary.json reports, with
# final_model.pt and with the user's own module holding final_weights.pt. Skips (77) where
# /usr/bin/python3 lacks torch.
#   your_model_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
example=$here/../../examples/your_model
source "$here/../lib/harness.sh"
require_python_torch
require_fashion_mnist
cd "$tmp" || exit 1
expect 0 "wrote net.pt, train.pt and test.pt" -- /usr/bin/python3 "$example/make_model.py" .
expect 0 "60000 training samples, 10000 test samples" -- "$troupe" validate "$example/job.json"
expect 0 "succeeded" -- "$troupe" run "$example/job.json" --out run --quiet \
  --set training.epochs=null --set training.steps=100 --set training.eval_interval=50
out=$(cd "$example" && /usr/bin/python3 use_model.py "$tmp/run" "$tmp" 2>&1)
echo "$out"
/usr/bin/python3 - "$out" <<'PY' && pass || fail "the figures differ: $out"
import re, sys
figures = [float(x) for x in re.findall(r"\d\.\d{4}", sys.argv[1])]
sys.exit(0 if len(figures) == 3 and max(figures) - min(figures) <= 0.005 and figures[0] > 0.3 else 1)
PY
report your_model_test
