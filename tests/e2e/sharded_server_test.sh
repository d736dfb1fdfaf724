#!/usr/bin/env bash
# async with a sharded parameter server (parallelism.ps_shards): one worker's run is the same bit
# for bit with 1, 2 or 3 shards (the shards apply the same gradients in the same order, the
# worker clipping its gradient before it is cut); it learns Fashion-MNIST with 2 workers and 3
# shards, with and without int8 on the wire; killed after a checkpoint and resumed it ends bit
# for bit where the uninterrupted run ends; across 3 local nodes under --tls the shards are one
# per node and the run completes (plain TCP across nodes: integration.node_loss's async case);
# absurd shard counts are refused naming the key.
#   sharded_server_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"
require_fashion_mnist

cat >"$tmp/job.json" <<'JSON'
{"name": "shards", "seed": 3,
 "model": {"type": "mlp", "hidden": [64, 32]},
 "data": {"type": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist"},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9, "nesterov": true},
 "training": {"steps": 120, "batch_size": 64, "eval_interval": 60, "clip_grad_norm": 1.0},
 "parallelism": {"policy": "async", "replicas": 1}}
JSON

# One worker: the shards change nothing, bit for bit.
for shards in 1 2 3; do
  timeout 120 "$troupe" run "$tmp/job.json" --out "$tmp/one_$shards" --quiet \
    --set parallelism.ps_shards=$shards >"$tmp/one_$shards.log" 2>&1 ||
    fail "1 worker, $shards shard(s): $(tail -3 "$tmp/one_$shards.log")"
done
for shards in 2 3; do
  cmp -s "$tmp/one_1/final_weights.pt" "$tmp/one_$shards/final_weights.pt" && pass ||
    fail "1 worker: $shards shards' weights differ from one server's"
done
grep -q '"ps_shards": 3' "$tmp/one_3/job.json" && pass ||
  fail "the run folder's job.json does not say ps_shards 3"
grep -q 'parameter server in 3 shards' "$tmp/one_3/plan.txt" && pass ||
  fail "plan.txt does not say the server is in 3 shards"

# Two workers, three shards: learns, also with int8 on the wire.
reaches_accuracy "$tmp/job.json" two 0.70 --set parallelism.replicas=2 \
  --set parallelism.ps_shards=3 --set training.steps=400 --set training.eval_interval=200
reaches_accuracy "$tmp/job.json" two8 0.70 --set parallelism.replicas=2 \
  --set parallelism.ps_shards=3 --set parallelism.compression=int8 --set training.steps=400 \
  --set training.eval_interval=200

# A checkpoint is a whole server's state: killed and resumed, the run ends where it would have.
resumes_bitwise "$tmp/job.json" --set parallelism.ps_shards=3 --set training.steps=600 \
  --set 'checkpoint={"every_steps": 50}'

# Across 3 local nodes under mutual TLS: a shard on each, the nodes' direct connections to the
# shards encrypted too.
start nodes_tls "$troupe" run "$tmp/job.json" --local-nodes 3 --tls --set parallelism.replicas=3 \
  --set parallelism.ps_shards=3 --set training.steps=60 --out "$tmp/nodes_tls" --quiet
finish $last_pid 120
check "async across 3 nodes under --tls" $status 0 "$tmp/nodes_tls.log" \
  "workers push and pull every shard directly (TLS 1.3)"
grep -q "parameter server in 3 shards (0 on local-0, 1 on local-1, 2 on local-2)" "$tmp/nodes_tls.log" &&
  pass || fail "across nodes: the shards are not one per node"

expect 2 "/parallelism/ps_shards" -- "$troupe" validate "$tmp/job.json" \
  --set parallelism.ps_shards=50
expect 2 "/parallelism/ps_shards" -- "$troupe" validate "$tmp/job.json" \
  --set parallelism.ps_shards=0
expect 2 "ps_shards" -- "$troupe" validate "$tmp/job.json" \
  --set parallelism.policy=sync --set parallelism.ps_shards=2

report "sharded server"
