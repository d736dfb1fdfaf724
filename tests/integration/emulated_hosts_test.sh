#!/usr/bin/env bash
# Runs across emulated hosts (scripts/emulate_hosts.sh: network namespaces on a bridge, each with
# its own address and /dev/shm, two `troupe node` processes per host, the coordinator on host 0):
#   - sync over 2 hosts x 2 nodes sums by host (each host's memory, then the hosts' leaders over
#     the socket ring: one ring link each way between the hosts) and ends within 1e-6 of the
#     in-process run, as does the flat ring of every rank (cluster.shared_memory=false), and
#     both again with cluster.collective "gloo" (gloo's mesh among the leaders, or every rank);
#   - 3 hosts of one node each: no two share memory, the ring runs over the network;
#   - host 1's link cut mid-run under cluster.on_node_loss "continue": both of its nodes are
#     lost, the run completes on host 0 and ends within the bound;
#   - bad command lines are refused with exit 2, naming what is wrong.
# Skipped (77) where this machine cannot make namespaces, veth pairs or a bridge (the script
# says which). Needs Fashion-MNIST and /usr/bin/python3 with torch.
#   emulated_hosts_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"
emulate="$here/../../scripts/emulate_hosts.sh"

require_fashion_mnist
require_python_torch

cat >"$tmp/job.json" <<'JSON'
{"name": "hosts", "seed": 3,
 "model": {"type": "mlp", "hidden": [64]},
 "data": {"type": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist"},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 60, "batch_size": 60},
 "parallelism": {"policy": "sync", "replicas": 4},
 "cluster": {"join_timeout_s": 30, "bucket_mb": 0.05}}
JSON

# hosts NAME H K [OPTIONS...] [-- ARGS...]: the job over H emulated hosts of K nodes into
# $tmp/NAME (logs in $tmp/NAME.logs), OPTIONS for the script and ARGS for the coordinator; sets
# `status`. Ends the test as skipped where the machine cannot.
hosts() {
  local name=$1 h=$2 k=$3 options=()
  shift 3
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    options+=("$1")
    shift
  done
  [ $# -gt 0 ] && shift
  timeout 200 "$emulate" --hosts "$h" --nodes-per-host "$k" --logs "$tmp/$name.logs" \
    --troupe "$troupe" "${options[@]}" -- "$tmp/job.json" --out "$tmp/$name" --quiet "$@" \
    >"$tmp/$name.out" 2>&1
  status=$?
  if [ $status = 77 ]; then
    # Not a tool the set-up installs but what the kernel allows: a skip, under CI too.
    echo "skipped: $(grep -m1 skipped "$tmp/$name.out")"
    exit 77
  fi
}

close_to_reference() {  # close_to_reference WHAT RUN_DIR
  local out
  if out=$(/usr/bin/python3 "$here/../python/compare_weights.py" "$tmp/ref" "$2" 1e-6 2>&1); then
    pass
  else
    fail "$1: weights differ from the in-process run: $out"
  fi
}

timeout 120 "$troupe" run "$tmp/job.json" --out "$tmp/ref" --quiet >/dev/null 2>&1 ||
  fail "the in-process reference run"

# --- 2 hosts x 2 nodes: summed by host --------------------------------------------------------
hosts by_host 2 2
log="$tmp/by_host.logs/coordinator.log"
check "2 hosts x 2 nodes" $status 0 "$log" \
  "4 nodes on 2 hosts (h0n0, h0n1 | h1n0, h1n1): sync gradients are summed in each host's memory"
links=$(grep -c "ring link" "$log")
grep -qF "ring link h0n0 -> h1n0" "$log" && grep -qF "ring link h1n0 -> h0n0" "$log" &&
  [ "$links" = 2 ] && pass || fail "by host: expected the leaders' two ring links, got: $(grep 'ring link' "$log")"
close_to_reference "summed by host" "$tmp/by_host"

# --- the same, every rank in one ring over the network ----------------------------------------
hosts flat 2 2 -- --set cluster.shared_memory=false
log="$tmp/flat.logs/coordinator.log"
check "flat ring over 2 hosts" $status 0 "$log" "ring link h0n1 -> h1n0"
grep -qF "summed in each host's memory" "$log" && fail "flat: summed by host anyway" || pass
close_to_reference "flat ring" "$tmp/flat"

# --- the same two shapes with cluster.collective "gloo" between the network's ranks -----------
hosts gloo_by_host 2 2 -- --set cluster.collective=gloo
log="$tmp/gloo_by_host.logs/coordinator.log"
check "2 hosts x 2 nodes, gloo among the leaders" $status 0 "$log" \
  "then among the hosts' leaders (workers 0, 2) over the gloo mesh"
grep -qF "gloo mesh formed among workers 0, 2" "$log" && pass || fail "gloo by host: no mesh formed"
close_to_reference "summed by host, gloo among the leaders" "$tmp/gloo_by_host"
hosts gloo_flat 2 2 -- --set cluster.shared_memory=false --set cluster.collective=gloo
check "gloo over 2 hosts" $status 0 "$tmp/gloo_flat.logs/coordinator.log" \
  "gloo mesh formed among workers 0, 1, 2, 3"
close_to_reference "gloo, every rank" "$tmp/gloo_flat"

# --- 3 hosts of one node: nothing to sum by host ----------------------------------------------
hosts apart 3 1 -- --set parallelism.replicas=3
check "3 hosts x 1 node" $status 0 "$tmp/apart.logs/coordinator.log" \
  "no two of the 3 nodes share a host's memory: the ring runs over the network"

# --- host 1's link cut at step 40 of 300: its two nodes are lost, host 0 completes ------------
t0=$SECONDS
hosts cut 2 2 --cut-link 1@40 -- --set training.steps=300 --set cluster.on_node_loss=continue \
  --set cluster.node_timeout_s=2 --set faults.slow_worker=0 --set faults.slow_ms=5
check "host 1's link cut" $status 0 "$tmp/cut.out" "cut host 1's link after step"
for n in h1n0 h1n1; do
  grep -qE "node $n lost at step [0-9]+" "$tmp/cut.logs/coordinator.log" && pass ||
    fail "link cut: node $n was not lost: $(tail -5 "$tmp/cut.logs/coordinator.log")"
done
[ "$(grep -c '"event":"node_lost"' "$tmp/cut/metrics.jsonl")" = 2 ] && pass ||
  fail "link cut: expected 2 node_lost records"
grep -q '"status": *"succeeded"' "$tmp/cut/summary.json" && pass || fail "link cut: the run did not succeed"
# 300 steps of 5 ms, the node timeout (2 s), start-up and the nodes' ends.
[ $((SECONDS - t0)) -le 60 ] && pass || fail "link cut: the run took $((SECONDS - t0)) s"

# --- bad command lines ------------------------------------------------------------------------
expect 2 "--hosts must be 1 to 200" -- "$emulate" --hosts 0 --nodes-per-host 1 -- "$tmp/job.json"
expect 2 "host 0 holds the coordinator" -- "$emulate" --hosts 2 --nodes-per-host 1 \
  --cut-link 0@5 -- "$tmp/job.json"
expect 2 "the hosts are 0 to 1" -- "$emulate" --hosts 2 --nodes-per-host 1 --cut-link 2@5 -- \
  "$tmp/job.json"
expect 2 "--rate must be a number and bit" -- "$emulate" --hosts 2 --nodes-per-host 1 \
  --rate fast -- "$tmp/job.json"
expect 2 "job file '$tmp/none.json' not found" -- "$emulate" --hosts 1 --nodes-per-host 1 -- \
  "$tmp/none.json"
expect 2 "no job" -- "$emulate" --hosts 1 --nodes-per-host 1
ip netns list | grep -q "^tr[0-9]*-" && fail "namespaces left behind: $(ip netns list)" || pass

report "emulated hosts"
