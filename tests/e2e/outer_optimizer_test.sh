#!/usr/bin/env bash
# local_sgd with DiLoCo's outer optimizer (parallelism.outer_optimizer): it learns Fashion-MNIST;
# it is not the plain average, and "none" is the plain average bit for bit; its outer steps
# between two checkpoints are torch.optim.SGD's with Nesterov momentum (tests/python/
# check_outer_step.py); killed after a checkpoint and resumed, it ends bit for bit where the
# uninterrupted run ends; a bad outer optimizer is refused naming the key.
#   outer_optimizer_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"
require_fashion_mnist
require_python_torch

cat >"$tmp/job.json" <<'JSON'
{"name": "diloco", "seed": 5,
 "model": {"type": "mlp", "hidden": [64]},
 "data": {"type": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist"},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 320, "batch_size": 64, "eval_interval": 160},
 "parallelism": {"policy": "local_sgd", "replicas": 2, "period": 8,
                 "outer_optimizer": {"type": "sgd", "lr": 0.7, "momentum": 0.5}}}
JSON

reaches_accuracy "$tmp/job.json" outer 0.70
timeout 120 "$troupe" run "$tmp/job.json" --out "$tmp/plain" --quiet \
  --set 'parallelism.outer_optimizer="none"' >/dev/null 2>&1 || fail "the plain local_sgd run"
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); del j["parallelism"]["outer_optimizer"]; json.dump(j, open(sys.argv[2], "w"))' \
  "$tmp/job.json" "$tmp/plain.json"
timeout 120 "$troupe" run "$tmp/plain.json" --out "$tmp/plain2" --quiet >/dev/null 2>&1 ||
  fail "local_sgd without the key"
cmp -s "$tmp/plain/final_weights.pt" "$tmp/plain2/final_weights.pt" && pass ||
  fail "outer_optimizer \"none\" is not the plain average bit for bit"
cmp -s "$tmp/outer/final_weights.pt" "$tmp/plain/final_weights.pt" &&
  fail "the outer optimizer changed nothing" || pass

# Checkpoints after every averaging step: the steps 7 -> 15 round against PyTorch.
timeout 120 "$troupe" run "$tmp/job.json" --out "$tmp/ckpt" --quiet \
  --set 'checkpoint={"every_steps": 8, "keep": 40}' --set training.steps=40 >/dev/null 2>&1 ||
  fail "the run with checkpoints"
if out=$(/usr/bin/python3 "$here/../python/check_outer_step.py" "$tmp/ckpt/checkpoints/step-15" \
  "$tmp/ckpt/checkpoints/step-23" 0.7 0.5 2>&1); then pass; else fail "outer step: $out"; fi
echo "  $out"

resumes_bitwise "$tmp/job.json" --set 'checkpoint={"every_steps": 40}'

expect 2 "/parallelism/outer_optimizer/momentum" -- "$troupe" validate "$tmp/job.json" \
  --set 'parallelism.outer_optimizer={"momentum": 1.5}'
expect 2 "/parallelism/outer_optimizer/type" -- "$troupe" validate "$tmp/job.json" \
  --set 'parallelism.outer_optimizer={"type": "adam"}'
expect 2 "/parallelism/outer_optimizer" -- "$troupe" validate "$tmp/job.json" \
  --set 'parallelism.outer_optimizer="fast"'
expect 2 "outer_optimizer" -- "$troupe" validate "$tmp/job.json" \
  --set 'parallelism.policy="sync"'

report "outer optimizer"
