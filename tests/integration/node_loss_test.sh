#!/usr/bin/env bash
# Runs that survive a lost node (cluster.on_node_loss "continue"): real coordinator and node
# processes on 127.0.0.1.
#   - sync, 3 nodes: one node killed with SIGKILL at a random step, for several seeds: the run
#     completes, its weights are within 1e-5 of the uninterrupted run's over 3 node processes
#     (or its losses are, up to a ReLU flip: see close_weights; up to the loss they are the same
#     bit for bit, the sums being the same ring's), the
#     node_lost / step_redone records and summary.json's failures (detection and recovery time)
#     are there, and summary.json counts every row of the run's steps once; the figures are
#     printed;
#   - exactly once: a node killed mid-epoch of a run of 4 whole epochs: summary.json's
#     rows_per_epoch is the training set's size for each;
#   - a node stopped (SIGSTOP) past node_timeout_s, then continued: it is cut off and leaves, the
#     run completes within the tolerance;
#   - a node stopped past cluster.step_timeout_s but within node_timeout_s: the watchdog names
#     it, it is fenced (its late messages are dropped) and told to leave; the run completes;
#   - the socket ring, formed again at every regroup, refused after a loss: the survivors sum
#     over actors and the run completes within the tolerance;
#   - cluster.collective "gloo": a node killed, and one stopped, under gloo's mesh: it is formed
#     again among the survivors and the run completes within the tolerance, every row once;
#   - async (its server sharded over the nodes, and in one piece), local_sgd, local_sgd with
#     DiLoCo's outer optimizer and streaming DiLoCo (fragments merged while the replicas go on)
#     lose a node and complete;
#   - a replacement joins mid-run: at the step boundary where it joins the driver compares a
#     digest of every replica's weights (a replicas_checked record, a log line), and the run
#     completes with identical replicas (the driver's final-weights check) within the tolerance;
#   - every sync section: summary.json's rows_per_epoch counts each of the run's rows once;
#     local SGD's counts every row its weights hold (not the lost replica's since its last
#     average, nor the drained steps' lost share);
#   - below cluster.min_nodes the run waits cluster.replacement_timeout_s, then ends with a
#     checkpoint naming the node missing, and --resume continues it: no step trained without
#     it, so the weights are the uninterrupted run's bit for bit.
# Every process is bounded and killed on exit. Needs Fashion-MNIST and /usr/bin/python3 with
# torch.
#   node_loss_test.sh PATH/TO/troupe [SEEDS]
set -uo pipefail
troupe=$1
seeds=${2:-3}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"

require_fashion_mnist
/usr/bin/python3 -c 'import torch' 2>/dev/null || fail "/usr/bin/python3 has no torch: weights cannot be compared"

tolerance=1e-5
# ONLY="kill fence" runs those sections alone (while working on one).
section() { [ -z "${ONLY:-}" ] || [[ " $ONLY " == *" $1 "* ]]; }

# wait_for_step RUN_DIR STEP: until a step record at or past STEP is written (at most 60 s).
wait_for_step() {
  for _ in $(seq 600); do
    /usr/bin/python3 - "$1/metrics.jsonl" "$2" <<'PY' 2>/dev/null && return 0
import json, sys
last = -1
for line in open(sys.argv[1]):
    try:
        r = json.loads(line)
    except ValueError:
        continue
    if r.get("event") == "step":
        last = max(last, r["step"])
sys.exit(0 if last >= int(sys.argv[2]) else 1)
PY
    sleep 0.1
  done
  return 1
}

# close_weights WHAT RUN_A RUN_B [TOLERANCE]: within the tolerance (default $tolerance; 0: bit
# for bit), or the same steps up to a ReLU flip (tests/python/compare_trajectory.py says why
# runs that differ only in the order of float sums may part, and how a lost or repeated row
# differs); prints what it found.
close_weights() {
  local out
  if out=$(/usr/bin/python3 "$here/../python/compare_trajectory.py" "$2" "$3" "${4:-$tolerance}" 2>&1); then
    pass
  else
    fail "$1: not the uninterrupted run's training: $out"
  fi
  echo "  $1: $out"
}

# failure_figures WHAT RUN_DIR KILLED_AT_UNIX [ROWS_PER_EPOCH]: the records and summary of one lost
# node; prints the detection time the run measured, the one from the kill, and the recovery
# time. summary.json's rows_per_epoch must be ROWS_PER_EPOCH (JSON; default: the 400 steps of
# 60 rows of this file's job, 24,000 rows of the first epoch): every row trained once, the lost
# node's rows in the steps its gradient was summed in too.
failure_figures() {
  local what=$1 out verdict message
  out=$(/usr/bin/python3 - "$2" "$3" "${4:-[24000]}" <<'PY' 2>&1
import json, sys
run, killed, rows = sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3])
records = []
for line in open(run + "/metrics.jsonl"):
    try:
        records.append(json.loads(line))
    except ValueError:
        pass
lost = [r for r in records if r.get("event") == "node_lost"]
redone = [r for r in records if r.get("event") == "step_redone"]
summary = json.load(open(run + "/summary.json"))
print(("pass" if summary.get("status") == "succeeded" else "fail") +
      f" status {summary.get('status')} {summary.get('error', '')}")
print(("pass" if len(lost) == 1 else "fail") + f" {len(lost)} node_lost record(s)")
print(("pass" if len(redone) >= 1 else "fail") + f" {len(redone)} step_redone record(s)")
failures = summary.get("failures", [])
ok = len(failures) == 1 and failures[0].get("recovery_s") is not None
print(("pass" if ok else "fail") + f" summary failures: {failures}")
steps = [r["step"] for r in records if r.get("event") == "step"]
print(("pass" if sorted(set(steps)) == list(range(summary.get("steps", -1))) else "fail") +
      " every step recorded once")
counted = summary.get("rows_per_epoch")
print(("pass" if counted == rows else "fail") + f" rows per epoch {counted}, expected {rows}")
if lost and ok:
    f = failures[0]
    print(f"info detection {lost[0]['unix_s'] - killed:.3f} s from the kill "
          f"({f['detection_s']:.3f} s from the node's last message), recovery "
          f"{f['recovery_s']:.3f} s, lost at step {lost[0]['step']}")
PY
  )
  while read -r verdict message; do
    case $verdict in
      pass) pass ;;
      info) echo "  $what: $message" ;;
      *) fail "$what: $message" ;;
    esac
  done <<<"$out"
}

# rows_once WHAT RUN_DIR: summary.json counts the 24,000 rows of the job's 400 steps of 60 once.
rows_once() {
  local rows
  rows=$(/usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["rows_per_epoch"])' \
    "$2/summary.json" 2>&1)
  [ "$rows" = "[24000]" ] && pass || fail "$1: rows per epoch $rows, expected [24000]"
}

cat >"$tmp/local.json" <<'JSON'
{"name": "lossy", "seed": 3,
 "model": {"type": "mlp", "hidden": [64]},
 "data": {"type": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist"},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 400, "batch_size": 60, "eval_interval": 100},
 "parallelism": {"policy": "sync", "replicas": 3}}
JSON
/usr/bin/python3 - "$tmp/local.json" "$tmp/job.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["cluster"] = {"nodes": 3, "join_timeout_s": 30, "bucket_mb": 0.05, "node_timeout_s": 2,
                "on_node_loss": "continue"}
json.dump(j, open(sys.argv[2], "w"))
PY
echo "s3cret" >"$tmp/token"
# The reference: the same job over 3 node processes, uninterrupted. Its sums are the socket
# ring's, as the runs below are until they lose a node; an in-process run sums in another order
# and parts from them at step 137 by a ReLU flip, after which no step can be compared.
# Nodes given 30 s before they count as lost (timeouts change no number): on a loaded machine
# the reference must not itself lose one and carry on.
"$troupe" run "$tmp/job.json" --local-nodes 3 --out "$tmp/ref" --quiet \
  --set cluster.node_timeout_s=30 >/dev/null 2>&1 || fail "reference run over 3 local nodes"
grep -qF '"event":"node_lost"' "$tmp/ref/metrics.jsonl" && fail "the reference run lost a node"
# gloo's sums come in the in-process run's order: its reference.
"$troupe" run "$tmp/local.json" --out "$tmp/ref_in_process" --quiet >/dev/null 2>&1 ||
  fail "in-process reference run"

# [RUN_JOB=FILE] start_run NAME [--set ...]: a coordinator of FILE (default: $tmp/job.json) and
# nodes a, b, c; sets $coord, $port, $node_a..c.
start_run() {
  local name=$1
  shift
  start "coord_$name" "$troupe" coordinator "${RUN_JOB:-$tmp/job.json}" --listen 127.0.0.1:0 \
    --token-file "$tmp/token" --out "$tmp/$name" --quiet "$@"
  listening_port "$tmp/coord_$name.log"
  coord=$last_pid
  for n in a b c; do
    start "${name}_$n" "$troupe" node --join "127.0.0.1:$port" --name "$n" --token-file "$tmp/token"
    eval "node_$n=$last_pid"
  done
}

# The sections that stop or kill a node at a given step once the run reached a step slow every step down by 5 ms (a
# straggler: the same numbers), so that the run is still going when the signal lands: 400
# steps of this network take under a second, about as long as polling metrics.jsonl may lag.
straggle="--set faults.slow_worker=0 --set faults.slow_ms=5"

# --- sync: SIGKILL one node of 3 at a random step, several seeds ---------------------------------
section kill && for seed in $(seq "$seeds"); do
  RANDOM=$((seed * 7919))
  at=$((20 + RANDOM % 300))
  victim=$(echo a b c | cut -d' ' -f$((1 + RANDOM % 3)))
  start_run "kill$seed"
  wait_for_step "$tmp/kill$seed" "$at" || fail "kill $seed: no step $at"
  eval "pid=\$node_$victim"
  killed=$(date +%s.%N)
  kill -9 "$pid"
  finish $coord 120
  check "kill -9 node $victim at step $at" $status 0 "$tmp/coord_kill$seed.log" "lost at step"
  close_weights "seed $seed: node $victim killed at step $at" "$tmp/ref" "$tmp/kill$seed"
  failure_figures "seed $seed" "$tmp/kill$seed" "$killed"
  for n in a b c; do
    [ $n = "$victim" ] && continue
    eval "finish \$node_$n 15"
    check "survivor $n (seed $seed)" $status 0 "$tmp/kill${seed}_$n.log" "the run succeeded"
  done
done

# --- exactly once: 4 whole epochs of 6,000 rows (54,000 held out for validation), a node killed
# mid-epoch; each epoch's count is the training set's size (100 steps of 60 rows, none dropped).
section once && {
cat >"$tmp/epochs.json" <<'JSON'
{"name": "epochs", "seed": 5,
 "model": {"type": "mlp", "hidden": [32]},
 "data": {"type": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist", "validation": 54000},
 "optimizer": {"type": "sgd", "lr": 0.05},
 "training": {"steps": 400, "batch_size": 60, "eval_interval": 400},
 "parallelism": {"policy": "sync", "replicas": 3},
 "cluster": {"nodes": 3, "join_timeout_s": 30, "bucket_mb": 0.05, "node_timeout_s": 2,
             "on_node_loss": "continue"}}
JSON
RUN_JOB="$tmp/epochs.json" start_run once $straggle
wait_for_step "$tmp/once" 150 || fail "once: no step 150"
killed=$(date +%s.%N)
kill -9 $node_c
finish $coord 120
check "exactly once: node c killed mid-epoch" $status 0 "$tmp/coord_once.log" "node c lost at step"
failure_figures "exactly once" "$tmp/once" "$killed" "[6000, 6000, 6000, 6000]"
for n in a b; do eval "finish \$node_$n 15"; done
}

# --- the socket ring cannot be formed again after the loss (as a firewall on the new ports): ----
# the regroup says why, the survivors sum over actors, and the run completes within the tolerance.
section reform && {
start_run reform --set faults.refuse_ring_reform=true
wait_for_step "$tmp/reform" 100 || fail "reform: no step 100"
kill -9 $node_b
finish $coord 120
check "socket ring refused after a loss" $status 0 "$tmp/coord_reform.log" \
  "refused to listen again (faults.refuse_ring_reform)"
grep -F "the socket ring could not be formed again" "$tmp/coord_reform.log" |
  grep -qF "the ring runs over actors in epoch" && pass ||
  fail "reform: the log does not say the ring went over actors"
close_weights "socket ring not formed again" "$tmp/ref" "$tmp/reform"
rows_once "socket ring not formed again" "$tmp/reform"
for n in a c; do
  eval "finish \$node_$n 15"
  check "reform: survivor $n" $status 0 "$tmp/reform_$n.log" "the run succeeded"
done
}

# --- SIGSTOP past node_timeout_s (2 s), then SIGCONT: cut off; it leaves, the run completes ----
section stop && {
start_run stop $straggle
wait_for_step "$tmp/stop" 100 || fail "stop: no step 100"
kill -STOP $node_b
stopped=$(date +%s.%N)
wait_for_step "$tmp/stop" 200 || fail "stop: the survivors did not go on"
kill -CONT $node_b
finish $coord 120
check "SIGSTOP past node_timeout_s" $status 0 "$tmp/coord_stop.log" "node b lost at step"
close_weights "node b stopped past node_timeout_s" "$tmp/ref" "$tmp/stop"
failure_figures "stopped node" "$tmp/stop" "$stopped"
finish $node_b 20
[ $status -ne 0 ] && pass || fail "the stopped node exited 0 after the run went on without it"
grep -qE "lost the coordinator|told to leave" "$tmp/stop_b.log" && pass ||
  fail "the stopped node does not say why it left: $(tail -3 "$tmp/stop_b.log")"
}

# --- SIGSTOP past cluster.step_timeout_s (2 s) but within node_timeout_s (8 s): the watchdog ----
# names it and the run goes on; on SIGCONT its connections are still up: what it had under way
# arrives under the old membership and is dropped (fenced), and it is told to leave.
section fence && {
start_run fence --set cluster.node_timeout_s=8 --set cluster.step_timeout_s=2 $straggle
wait_for_step "$tmp/fence" 100 || fail "fence: no step 100"
kill -STOP $node_c
wait_for_step "$tmp/fence" 150 || fail "fence: the survivors did not go on"
kill -CONT $node_c
finish $coord 120
check "SIGSTOP past step_timeout_s" $status 0 "$tmp/coord_fence.log" "node c lost at step"
# Named as the one that did not answer the probe, or as behind (it stopped after the others
# had summed a step it had not).
grep -q '"event":"node_lost".*worker 2 (node c)' "$tmp/fence/metrics.jsonl" && pass ||
  fail "fence: the node_lost record does not name worker 2 (node c)"
close_weights "node c fenced" "$tmp/ref" "$tmp/fence"
rows_once "node c fenced" "$tmp/fence"
finish $node_c 20
check "the fenced node leaves" $status 1 "$tmp/fence_c.log" "told to leave"
}

# --- cluster.collective "gloo": the sums go over gloo's mesh, formed again among the survivors
# at the regroup; a node killed (its connections close) and one stopped past node_timeout_s (they
# stay open: the survivors' sums waiting on it are left to gloo's timeout on their threads).
section gloo && for how in KILL STOP; do
  start_run "gloo_$how" --set cluster.collective=gloo $straggle
  wait_for_step "$tmp/gloo_$how" 100 || fail "gloo $how: no step 100"
  kill -$how $node_b
  finish $coord 120
  check "gloo: SIG$how node b" $status 0 "$tmp/coord_gloo_$how.log" "node b lost at step"
  grep -qF "gloo mesh formed among workers 0, 1, 2" "$tmp/coord_gloo_$how.log" && pass ||
    fail "gloo $how: the log does not say the gloo mesh was formed"
  grep -qF "gloo mesh formed again among workers 0, 2 (epoch" "$tmp/coord_gloo_$how.log" &&
    pass || fail "gloo $how: the mesh was not formed again among the survivors"
  close_weights "gloo: node b SIG$how" "$tmp/ref_in_process" "$tmp/gloo_$how"
  rows_once "gloo: node b SIG$how" "$tmp/gloo_$how"
  for n in a c; do
    eval "finish \$node_$n 15"
    check "gloo $how: survivor $n" $status 0 "$tmp/gloo_${how}_$n.log" "the run succeeded"
  done
  [ $how = STOP ] && kill -CONT $node_b
  finish $node_b 20
done

# --- async, local_sgd, DiLoCo and streaming DiLoCo: a node killed mid-run; every step completes -
# async with a shard on each node: node a's shard starts again in the coordinator; async_one
# keeps one server, in the coordinator.
for policy in async async_one local_sgd diloco streaming; do
  section "$policy" || continue
  if [ $policy = async ]; then
    start_run "$policy" --set parallelism.policy=async --set parallelism.max_staleness=2 \
      --set parallelism.ps_shards=3
  elif [ $policy = async_one ]; then
    start_run "$policy" --set parallelism.policy=async --set parallelism.max_staleness=2 \
      --set parallelism.ps_shards=1
  elif [ $policy = local_sgd ]; then
    start_run "$policy" --set parallelism.policy=local_sgd --set parallelism.period=4
  elif [ $policy = diloco ]; then  # the survivors' average stepped by the outer optimizer
    start_run "$policy" --set parallelism.policy=local_sgd --set parallelism.period=4 \
      --set 'parallelism.outer_optimizer={"lr": 0.7, "momentum": 0.5}'
  else  # streaming DiLoCo: 2 fragments, each average merged 2 steps on while the replicas go on
    start_run "$policy" --set parallelism.policy=local_sgd --set parallelism.period=4 \
      --set 'parallelism.outer_optimizer={"lr": 0.7, "momentum": 0.5}' \
      --set parallelism.fragments=2 --set parallelism.fragment_overlap=2
  fi
  wait_for_step "$tmp/$policy" 100 || fail "$policy: no step 100"
  kill -9 $node_a
  finish $coord 120
  check "$policy: a node killed" $status 0 "$tmp/coord_$policy.log" "node a lost at step"
  if [ $policy = async ]; then
    grep -qF "parameter server shard 0 lost; started again here from" \
      "$tmp/coord_$policy.log" && pass || fail "async: shard 0 was not started again"
  fi
  /usr/bin/python3 - "$tmp/$policy" "$tmp/coord_$policy.log" "$policy" <<'PY' && pass || fail "$policy: $(tail -2 "$tmp/coord_$policy.log")"
import json, re, sys
run, log, policy = sys.argv[1:]
s = json.load(open(run + "/summary.json"))
ok = s["status"] == "succeeded" and s["steps"] == 400 and len(s.get("failures", [])) == 1
rows = s.get("rows_per_epoch")
print(f"  {s['status']}, {s['steps']} steps, failures {s.get('failures')}, rows per epoch {rows}")
if policy in ("local_sgd", "diloco", "streaming"):
    # The weights hold every row of the steps through node a's last average (A: its weights
    # went in even where its report of A never came), the survivors' 40 of each step they
    # drained after it before the regroup, then the whole batch again: node a's rows after A
    # are in no average, whether it had reported them or not. Every step from A + 1 to the
    # last drained one lacks node a's 20: those it reported before it was lost (whole in the
    # step records) and those it never reached (drained).
    averaged = re.search(r"trained after step (\d+) \(its last average\)", open(log).read())
    a = int(averaged.group(1)) if averaged else 10**9
    records = [json.loads(line) for line in open(run + "/metrics.jsonl")]
    short = [r["step"] for r in records if r.get("event") == "step" and r["samples"] == 40]
    drained = [step for step in short if step > a]
    expected = [24000 - 20 * (max(drained) - a if drained else 0)]
    print(f"  node a's last average after step {a}, {len(drained)} steps drained by the two "
          f"survivors after it, the last {max(drained, default=None)}: {expected[0]} rows "
          f"expected")
    ok = ok and rows == expected and all(step >= a for step in short)
sys.exit(0 if ok else 1)
PY
  for n in b c; do
    eval "finish \$node_$n 15"
    check "$policy: survivor $n" $status 0 "$tmp/${policy}_$n.log" "the run succeeded"
  done
done

# --- a replacement joins mid-run: it receives the state and its share; replicas stay identical --
# An evaluation after every step makes the run last several seconds (400 steps take about one
# otherwise) without changing its weights, so that the replacement, which loads its data first,
# is admitted while the survivors go on.
section join && {
start_run join --set training.eval_interval=1
wait_for_step "$tmp/join" 40 || fail "join: no step 40"
kill -9 $node_b
wait_for_step "$tmp/join" 60 || fail "join: the survivors did not go on"
start join_d "$troupe" node --join "127.0.0.1:$port" --name d --token-file "$tmp/token"
node_d=$last_pid
finish $coord 120
check "a replacement joins" $status 0 "$tmp/coord_join.log" "node d joined the run at step"
grep -q '"event":"node_joined".*"node":"d"' "$tmp/join/metrics.jsonl" && pass ||
  fail "join: no node_joined record"
# Right after the join, before the next step: every replica, d's included, reported the same
# digest of its weights (a difference would have ended the run, naming the replica).
/usr/bin/python3 - "$tmp/join/metrics.jsonl" <<'PY' && pass || fail "join: no replicas_checked record at d's join"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
joined = [r for r in records if r["event"] == "node_joined" and r["node"] == "d"]
checked = [r for r in records if r["event"] == "replicas_checked"]
assert joined and checked, (joined, checked)
at_join = [c for c in checked if c["step"] == joined[0]["step"] - 1]
assert at_join, (joined, checked)
assert len(at_join[0]["workers"]) == 3 and set(joined[0]["workers"]) <= set(at_join[0]["workers"]), at_join
assert len(at_join[0]["sha256"]) == 64, at_join
PY
grep -qF "hold identical weights after step" "$tmp/coord_join.log" && pass ||
  fail "join: the coordinator does not say the replicas agree after d joined"
# The driver checked that every replica (d's too) ended with the same weights: the run
# succeeded. They are also the uninterrupted run's, up to the order of float sums.
close_weights "node b lost, node d joined" "$tmp/ref" "$tmp/join"
rows_once "node b lost, node d joined" "$tmp/join"
finish $node_d 15
check "the replacement node" $status 0 "$tmp/join_d.log" "the run succeeded"
}

# --- below min_nodes: the survivors wait, a replacement of the same name comes, the run goes on --
section wait && {
start_run wait --set cluster.min_nodes=3 --set cluster.replacement_timeout_s=60
wait_for_step "$tmp/wait" 60 || fail "wait: no step 60"
kill -9 $node_c
for _ in $(seq 100); do grep -qF "waiting up to 60 s for replacements of c" "$tmp/coord_wait.log" && break; sleep 0.1; done
grep -qF "waiting up to 60 s for replacements of c" "$tmp/coord_wait.log" && pass ||
  fail "wait: the coordinator does not say it waits for c"
start wait_c2 "$troupe" node --join "127.0.0.1:$port" --name c --token-file "$tmp/token"
node_c2=$last_pid
finish $coord 120
check "below min_nodes, a replacement" $status 0 "$tmp/coord_wait.log" "node c joined the run at step"
grep -qF "hold identical weights after step" "$tmp/coord_wait.log" && pass ||
  fail "wait: the coordinator does not say the replicas agree after c joined"
close_weights "node c lost and replaced" "$tmp/ref" "$tmp/wait" 0
rows_once "node c lost and replaced" "$tmp/wait"
finish $node_c2 15
check "the replacement c" $status 0 "$tmp/wait_c2.log" "the run succeeded"
}

# --- below min_nodes and nobody comes: ends with a checkpoint naming who is missing; resumed ----
section ending && {
# Evaluating only after the last step: survivors that stop at a step whose evaluation the lost
# node left incomplete write no checkpoint there (the last one written stands), and on an idle
# machine the kill can land next to step 199's evaluation.
start_run ending --set cluster.min_nodes=3 --set cluster.replacement_timeout_s=2 \
  --set training.eval_interval=400
wait_for_step "$tmp/ending" 120 || fail "ending: no step 120"
kill -9 $node_b
finish $coord 60
check "no replacement in time" $status 1 "$tmp/coord_ending.log" \
  "fewer than cluster.min_nodes (3), and no replacement came within 2 s (cluster.replacement_timeout_s); missing: b"
grep -qF "lets it go on" "$tmp/coord_ending.log" && pass || fail "ending: no checkpoint written"
ls "$tmp/ending/checkpoints" | grep -q "^step-" && pass || fail "ending: no checkpoint folder"
for n in a c; do eval "finish \$node_$n 15"; done
start coord_resumed "$troupe" coordinator --resume "$tmp/ending" --listen 127.0.0.1:0 \
  --token-file "$tmp/token" --quiet
listening_port "$tmp/coord_resumed.log"
coord=$last_pid
for n in a b c; do
  start "resumed_$n" "$troupe" node --join "127.0.0.1:$port" --name "$n" --token-file "$tmp/token"
done
finish $coord 120
check "resumed after the ending" $status 0 "$tmp/coord_resumed.log" "succeeded"
close_weights "ended below min_nodes, resumed" "$tmp/ref" "$tmp/ending" 0
rows_once "ended below min_nodes, resumed" "$tmp/ending"
}

report node_loss_test
