#!/usr/bin/env bash
# Integration tests of runs across processes: real `troupe coordinator` and `troupe node`
# processes on 127.0.0.1 with free ports. Sync with 2 and 3 nodes, through shared memory and
# over the network's ring (the socket ring: plain TCP between ring neighbours), must give the
# in-process run's weights (<= 1e-6), and so must local_sgd
# (float32 and int8 on the wire), and so must 3 nodes forked from one `troupe node --processes
# 3`, whose launcher passes a SIGTERM on and, SIGKILLed, leaves no node behind (nor forks with
# a thread already running); async (float32 and int8) finishes; wrong, missing and
# old-version nodes and garbage bytes on the port are refused without disturbing the run; a
# killed node, a hung one (through shared memory and through the socket ring) and a step that
# never completes end the run with a message naming them; nodes that do not
# come, bad addresses and a token-less public listener are refused; a coordinator whose actor
# system never stops still ends, its outputs written. Every process is bounded by
# `timeout` and killed on exit, pass or fail. Needs Fashion-MNIST and /usr/bin/python3 with
# torch (a missing torch fails the weight comparisons, it does not skip them).
#   cluster_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"

require_fashion_mnist
have_torch=1
/usr/bin/python3 -c 'import torch' 2>/dev/null || have_torch=0
[ $have_torch = 1 ] || echo "/usr/bin/python3 has no torch: every weight comparison will fail"

wait_for_steps() {  # wait_for_steps RUN_DIR: until training has begun (at most 30 s)
  for _ in $(seq 300); do
    grep -q '"step"' "$1/metrics.jsonl" 2>/dev/null && return
    sleep 0.1
  done
}

summary_field() {  # summary_field RUN_DIR KEY
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1] + "/summary.json")).get(sys.argv[2]))' "$1" "$2"
}

same_weights() {  # same_weights WHAT RUN_A RUN_B
  if [ $have_torch != 1 ]; then
    fail "$1: cannot compare weights: torch is missing (/usr/bin/python3 -c 'import torch' fails)"
  elif out=$(/usr/bin/python3 "$here/../python/compare_weights.py" "$2" "$3" 1e-6 2>&1); then
    pass
  else
    fail "$1: weights differ from the in-process run: $out"
  fi
}

# ended_by_failure WHAT RUN_DIR NODE STEPS MAX_GAP_S: judges what the coordinator recorded in
# RUN_DIR/metrics.jsonl, not this script's clock, as four checks: (1) a failure record,
# (2) whose error names NODE, (3) training stopped long before its STEPS steps (the last step
# record below STEPS/2: the failure ended it, not `finish`), (4) the run's own time from its
# last step record to the failure record ("t", seconds since the run started) is at most
# MAX_GAP_S.
ended_by_failure() {
  local what=$1 out verdict message checks=0
  out=$(/usr/bin/python3 - "$2/metrics.jsonl" "$3" "$4" "$5" 2>&1 <<'PY'
import json, sys
path, node, steps, max_gap = sys.argv[1], sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
last_step = failure = None
problem = ""
try:
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError:
                problem = f"{path} line {number} is not JSON: {line.strip()[:80]!r}"
                break
            if record.get("event") == "step":
                last_step = record
            elif record.get("event") == "failure" and failure is None:
                failure = record
except OSError as e:
    problem = f"cannot read {path}: {e}"
if problem:
    for _ in range(4):
        print("fail " + problem)
    sys.exit(0)
if failure is None:
    print(f"fail no failure record in {path}")
else:
    print(f"pass failure record: {failure.get('error')!r} at t={failure.get('t')}")
error = str((failure or {}).get("error", ""))
if node in error:
    print(f"pass the failure names {node!r}")
else:
    print(f"fail the failure record's error does not name {node!r}: {error!r}")
if last_step is None:
    print(f"fail no step record in {path}")
elif last_step["step"] >= steps // 2:
    print(f"fail training went on to step {last_step['step']} of {steps}: the failure did not end it")
else:
    print(f"pass training stopped after step {last_step['step']} of {steps}")
if failure is None or last_step is None:
    print("fail no time from the last step to the failure: a record is missing")
else:
    gap = float(failure["t"]) - float(last_step["t"])
    verdict = "pass" if 0 <= gap <= max_gap else "fail"
    print(f"{verdict} {gap:.2f} s of run time from the last step (t={last_step['t']}) to the "
          f"failure (t={failure['t']}), allowed 0 to {max_gap:g} s")
PY
  )
  while read -r verdict message; do
    [ -n "$verdict" ] || continue
    checks=$((checks + 1))
    if [ "$verdict" = pass ]; then pass; else fail "$what: $message"; fi
  done <<<"$out"
  [ $checks = 4 ] || fail "$what: metrics.jsonl helper gave $checks of 4 verdicts: $out"
}

cat >"$tmp/job.json" <<'JSON'
{"name": "cluster", "seed": 3,
 "model": {"type": "mlp", "hidden": [64]},
 "data": {"type": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist"},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 30, "batch_size": 60},
 "parallelism": {"policy": "sync", "replicas": 2},
 "cluster": {"nodes": 2, "join_timeout_s": 30, "bucket_mb": 0.05}}
JSON
echo "s3cret-token" >"$tmp/token"
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); del j["cluster"]; json.dump(j, open(sys.argv[2], "w"))' \
  "$tmp/job.json" "$tmp/local.json"

# --- sync, coordinator + 2 nodes started by hand, against the in-process run ------------------
"$troupe" run "$tmp/local.json" --out "$tmp/local2" --quiet >/dev/null 2>&1 ||
  fail "in-process reference run"
start coord2 "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --set cluster.shared_memory=false --token-file "$tmp/token" --out "$tmp/dist2" --quiet
listening_port "$tmp/coord2.log"
coord=$last_pid
start node_a "$troupe" node --join "127.0.0.1:$port" --name a --threads 1 --token-file "$tmp/token"
node_a=$last_pid
start node_b "$troupe" node --join "127.0.0.1:$port" --name b --threads 1 --token-file "$tmp/token"
node_b=$last_pid
finish $coord 90
check "sync 2 nodes" $status 0 "$tmp/coord2.log" "node a joined"
grep -qF "ring link a -> b" "$tmp/coord2.log" && pass || fail "no direct ring link a -> b"
finish $node_a 15
check "node a" $status 0 "$tmp/node_a.log" "the run succeeded"
finish $node_b 15
check "node b" $status 0 "$tmp/node_b.log" "the run succeeded"
same_weights "sync 2 nodes" "$tmp/local2" "$tmp/dist2"

# --- sync, 3 local nodes; local_sgd and async across 2 ---------------------------------------
"$troupe" run "$tmp/local.json" --set parallelism.replicas=3 \
  --out "$tmp/local3" --quiet >/dev/null 2>&1 || fail "in-process reference run, 3 replicas"
shm_before=$(ls /dev/shm | grep '^troupe-' | sort)
start local3 "$troupe" run "$tmp/job.json" --set parallelism.replicas=3 --local-nodes 3 \
  --out "$tmp/dist3" --quiet
finish $last_pid 90
check "sync --local-nodes 3" $status 0 "$tmp/local3.log" "succeeded"
grep -qF "all 3 node(s) share this host's memory" "$tmp/local3.log" && pass ||
  fail "sync --local-nodes 3 did not sum through shared memory"
same_weights "sync 3 nodes, shared memory" "$tmp/local3" "$tmp/dist3"
[ -f "$tmp/dist3/nodes/local-2.log" ] && pass || fail "no log of local node 2"
# A segment is named after the process that made it (troupe-PID-...): one whose maker still runs
# belongs to another troupe on this machine (a test beside this one), not to this run.
left=$(comm -13 <(echo "$shm_before") <(ls /dev/shm | grep '^troupe-' | sort) |
  while read -r segment; do
    maker=${segment#troupe-}
    kill -0 "${maker%%-*}" 2>/dev/null || echo "$segment"
  done)
[ -z "$left" ] && pass || fail "shared-memory segments left in /dev/shm: $left"
start ring3 "$troupe" run "$tmp/job.json" --set parallelism.replicas=3 --local-nodes 3 \
  --set cluster.shared_memory=false --out "$tmp/dist3_ring" --quiet
finish $last_pid 90
check "sync --local-nodes 3 over the network" $status 0 "$tmp/ring3.log" "succeeded"
grep -qF "share this host's memory" "$tmp/ring3.log" &&
  fail "cluster.shared_memory=false still shared memory" || pass
same_weights "sync 3 nodes, ring" "$tmp/local3" "$tmp/dist3_ring"

# --- 3 nodes forked from one `troupe node --processes 3`: the same weights; a stop sent to it ---
# --- reaches every node; a SIGKILLed one takes its nodes with it (the parent-death signal) -----
start coord_fork "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --set parallelism.replicas=3 --set cluster.nodes=3 --token-file "$tmp/token" \
  --out "$tmp/dist_fork" --quiet
listening_port "$tmp/coord_fork.log"
coord=$last_pid
start forked "$troupe" node --join "127.0.0.1:$port" --name f --processes 3 --threads 1 \
  --token-file "$tmp/token"
forked=$last_pid
finish $coord 90
check "sync, 3 forked nodes" $status 0 "$tmp/coord_fork.log" "node f-2 joined"
finish $forked 15
check "troupe node --processes 3" $status 0 "$tmp/forked.log" "node f-1: the run succeeded"
same_weights "sync, 3 forked nodes" "$tmp/local3" "$tmp/dist_fork"
for signal in TERM KILL; do
  start coord_$signal "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
    --set parallelism.replicas=3 --set cluster.nodes=3 --set training.steps=1000000 \
    --token-file "$tmp/token" --out "$tmp/dist_$signal" --quiet
  listening_port "$tmp/coord_$signal.log"
  coord=$last_pid
  start forked_$signal "$troupe" node --join "127.0.0.1:$port" --name "sig$signal" \
    --processes 3 --threads 1 --token-file "$tmp/token"
  forked=$last_pid
  wait_for_steps "$tmp/dist_$signal"
  kill -$signal $forked
  finish $forked 15
  # SIGTERM: each node leaves the run and says so, the parent exits 130 (they died mid-step and
  # the parent called each a failure).
  [ $signal = KILL ] || check "forked nodes sent SIGTERM" $status 130 "$tmp/forked_$signal.log" \
    "node sig$signal-1: stopped by an interrupt; left the run"
  for _ in $(seq 100); do
    pgrep -f -- "--name sig$signal --processes" >/dev/null || break
    sleep 0.1
  done
  pgrep -f -- "--name sig$signal --processes" >/dev/null &&
    fail "forked nodes outlived their parent (SIG$signal)" || pass
  finish $coord 30
  check "coordinator, its forked nodes stopped (SIG$signal)" $status 1 \
    "$tmp/coord_$signal.log" "(node sig$signal-"
done
# cluster.collective "gloo": the same sums over gloo's halving-doubling (3 ranks: not a power
# of two) come to the same weights.
start gloo3 "$troupe" run "$tmp/job.json" --set parallelism.replicas=3 --local-nodes 3 \
  --set cluster.shared_memory=false --set cluster.collective=gloo --out "$tmp/dist3_gloo" --quiet
finish $last_pid 90
check "sync --local-nodes 3 over gloo" $status 0 "$tmp/gloo3.log" "succeeded"
grep -qF "gloo mesh formed among workers 0, 1, 2" "$tmp/gloo3.log" &&
  pass || fail "cluster.collective gloo: no gloo mesh formed"
same_weights "sync 3 nodes, gloo" "$tmp/local3" "$tmp/dist3_gloo"

# A coordinator whose actor system does not stop (a detached actor never released, as once seen
# at the end of a sharded run under load) still ends: it says so, writes every output and exits
# with the run's status instead of waiting for ever.
start stuck "$troupe" run "$tmp/job.json" --local-nodes 2 --set faults.stuck_exit=true \
  --out "$tmp/stuck" --quiet
finish $last_pid 60
check "a system that does not stop" $status 0 "$tmp/stuck.log" "did not stop within 1 s"
grep -q '"status": "succeeded"' "$tmp/stuck/summary.json" && [ -f "$tmp/stuck/final_weights.pt" ] &&
  pass || fail "the stuck coordinator's outputs are missing"

"$troupe" run "$tmp/local.json" --set parallelism.policy=local_sgd \
  --set parallelism.period=4 --out "$tmp/local_lsgd" --quiet >/dev/null 2>&1 ||
  fail "in-process local_sgd run"
start lsgd "$troupe" run "$tmp/job.json" --set parallelism.policy=local_sgd \
  --set parallelism.period=4 --local-nodes 2 --out "$tmp/dist_lsgd" --quiet
finish $last_pid 90
check "local_sgd --local-nodes 2" $status 0 "$tmp/lsgd.log" "succeeded"
same_weights "local_sgd 2 nodes" "$tmp/local_lsgd" "$tmp/dist_lsgd"
# parallelism.compression: weights and averages cross the wire packed in int8, and the run
# computes what the same job computes in one process (the packing happens there too).
"$troupe" run "$tmp/local.json" --set parallelism.policy=local_sgd --set parallelism.period=4 \
  --set parallelism.compression=int8 --out "$tmp/local_lsgd8" --quiet >/dev/null 2>&1 ||
  fail "in-process local_sgd int8 run"
start lsgd8 "$troupe" run "$tmp/job.json" --set parallelism.policy=local_sgd \
  --set parallelism.period=4 --set parallelism.compression=int8 --local-nodes 2 \
  --out "$tmp/dist_lsgd8" --quiet
finish $last_pid 90
check "local_sgd int8 --local-nodes 2" $status 0 "$tmp/lsgd8.log" "succeeded"
same_weights "local_sgd int8 2 nodes" "$tmp/local_lsgd8" "$tmp/dist_lsgd8"

# A step timeout well inside the test's bound: a run that hangs (seen once in ~60 runs, not
# reproduced since) then ends itself naming the workers it waits for, and the log says so.
start async "$troupe" run "$tmp/job.json" --set parallelism.policy=async \
  --set parallelism.max_staleness=2 --set cluster.step_timeout_s=30 --local-nodes 2 \
  --out "$tmp/dist_async" --quiet
finish $last_pid 90
check "async --local-nodes 2" $status 0 "$tmp/async.log" "succeeded"
[ "$status" -eq 0 ] || tail -n 20 "$tmp"/dist_async/nodes/*.log "$tmp"/dist_async/metrics.jsonl
[ "$(summary_field "$tmp/dist_async" steps)" = 30 ] && pass || fail "async: not 30 steps"
start async8 "$troupe" run "$tmp/job.json" --set parallelism.policy=async \
  --set parallelism.compression=int8 --set cluster.step_timeout_s=30 --local-nodes 2 \
  --out "$tmp/dist_async8" --quiet
finish $last_pid 90
check "async int8 --local-nodes 2" $status 0 "$tmp/async8.log" "succeeded"
[ "$(summary_field "$tmp/dist_async8" steps)" = 30 ] && pass || fail "async int8: not 30 steps"

# --- intruders: wrong token, no token, another version, garbage bytes; the run goes on -------
start coord_t "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --token-file "$tmp/token" --out "$tmp/dist_t" --quiet
listening_port "$tmp/coord_t.log"
coord=$last_pid
echo "wrong" >"$tmp/wrong"
start wrong "$troupe" node --join "127.0.0.1:$port" --name w --token-file "$tmp/wrong"
finish $last_pid 30
check "wrong token" $status 1 "$tmp/wrong.log" 'refused: node "w": wrong token'
start none env -u TROUPE_TOKEN "$troupe" node --join "127.0.0.1:$port" --name n
finish $last_pid 30
check "no token" $status 1 "$tmp/none.log" 'refused: node "n": no token'
start old "$troupe" node --join "127.0.0.1:$port" --name o --token-file "$tmp/token" \
  --claim-version 0.0.9
finish $last_pid 30
check "other version" $status 1 "$tmp/old.log" "runs troupe 0.0.9, this coordinator runs troupe"
# A name with a line break and a terminal escape (a forged log line): refused, shown escaped.
start forged "$troupe" node --join "127.0.0.1:$port" --name f --token-file "$tmp/token" \
  --claim-name $'f\n\e[2Jerror: run failed'
finish $last_pid 30
check "forged name" $status 1 "$tmp/forged.log" \
  'refused: node "f\n\u001b[2Jerror: run failed": a node name holds only'
/usr/bin/python3 - "$port" <<'PY' || fail "could not send garbage"
import os, socket, sys
for payload in (os.urandom(65536), b"\x00" * 7, b"\x01" + b"\xff" * 40):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(payload)
    s.close()
PY
# A stranger through CAF's handshake (no token needed) with a frame claiming a CAF stream: it
# crashed the coordinator (a segmentation fault); now its connection is closed.
/usr/bin/python3 "$here/../python/basp_stranger.py" forged "$port" && pass ||
  fail "a forged stream frame did not close its connection"
start good_a "$troupe" node --join "127.0.0.1:$port" --name a --token-file "$tmp/token"
start good_b "$troupe" node --join "127.0.0.1:$port" --name b --token-file "$tmp/token"
finish $coord 90
check "run beside intruders" $status 0 "$tmp/coord_t.log" "refused a join"
log_has "forged stream frame" "$tmp/coord_t.log" "a message claiming to be part of a CAF stream"
same_weights "run beside intruders" "$tmp/local2" "$tmp/dist_t"

# --- strangers through CAF's handshake, kept alive by heartbeats, never joining: they held the
# --- coordinator's descriptors for ever (19,610 of them ran it out of descriptors); now each is
# --- closed 15 s after it connected (and counts against the 64 pending until then)
start coord_h "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --set cluster.join_timeout_s=25 --out "$tmp/dist_h" --quiet
listening_port "$tmp/coord_h.log"
coord=$last_pid
# The strangers connect first, the checks below run while they hold on: their 15 s must end
# before the coordinator's 25 s of waiting for nodes do, however slowly the checks' processes
# start on a busy machine.
/usr/bin/python3 "$here/../python/basp_stranger.py" hold "$port" 60 18 >"$tmp/hold.log" 2>&1 &
holder=$!
# A second coordinator on its port is refused before anything runs (it failed the run, exit 1).
expect 2 "--listen 127.0.0.1:$port: the port is in use (another program listens there)" -- \
  "$troupe" coordinator "$tmp/job.json" --listen "127.0.0.1:$port" --out "$tmp/dist_in_use"
[ ! -e "$tmp/dist_in_use" ] && pass || fail "a coordinator on a port in use made its folder"
# A node asked to join port 0 (it waited for ever), or given a token pipe nobody writes to (it
# waited in open() for ever): refused at once.
expect 2 "--join 127.0.0.1:0: port 0 names no coordinator" -- "$troupe" node --join 127.0.0.1:0
mkfifo "$tmp/token_pipe"
expect 2 "a pipe that no program writes to" -- "$troupe" node --join "127.0.0.1:$port" \
  --token-file "$tmp/token_pipe"
wait $holder && pass || fail "connections that never joined were not closed: $(cat "$tmp/hold.log")"
log_has "held connections" "$tmp/coord_h.log" "its node did not join the run within 15 s of connecting"
finish $coord 30
check "a run no node joined" $status 1 "$tmp/coord_h.log" ""
# (after the stranger's test: its coordinator waits only 25 s for joins)
# An address of no interface here is refused before anything runs, port 0 too (it made its
# folder and failed the run, exit 1, in CAF's words).
expect 2 "--listen 192.0.2.1:0: cannot listen there: Cannot assign requested address" -- \
  "$troupe" coordinator "$tmp/job.json" --listen 192.0.2.1:0 --out "$tmp/dist_elsewhere"
[ ! -e "$tmp/dist_elsewhere" ] && pass || fail "a coordinator on another machine's address made its folder"
# Ctrl-C while a node waits for its coordinator is a stop (130), not a failure to reach it (1).
start waiting "$troupe" node --join 127.0.0.1:1 --connect-timeout 60
for _ in $(seq 300); do grep -qF "waiting for the coordinator" "$tmp/waiting.log" && break; sleep 0.1; done
kill -INT "$last_pid"
finish "$last_pid" 10
check "node stopped before it joined" "$status" 130 "$tmp/waiting.log" \
  "stopped by an interrupt before it joined"
# Its port at once: the connections it closed left it in TIME_WAIT, which refused the port for a
# minute ("in use") to the coordinator started again there (as an interrupt's hint says to).
start coord_again "$troupe" coordinator "$tmp/job.json" --listen "127.0.0.1:$port" \
  --set cluster.join_timeout_s=1 --out "$tmp/dist_again" --quiet
finish $last_pid 30
check "its port again at once" $status 1 "$tmp/coord_again.log" ""
! grep -q "in use" "$tmp/coord_again.log" && [ -d "$tmp/dist_again" ] && pass ||
  fail "the port of a run that ended was refused: $(tail -2 "$tmp/coord_again.log")"

# --- a node killed mid-run, a hung one: the run ends, naming it; through shared memory and ---
# --- through the socket ring (cluster.shared_memory=false: plain TCP between ring neighbours) --
for plane in shm tcp; do
plane_set=()
[ $plane = tcp ] && plane_set=(--set cluster.shared_memory=false)
start coord_k_$plane "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --set training.steps=2000 --set faults.slow_worker=0 --set faults.slow_ms=20 "${plane_set[@]}" \
  --out "$tmp/dist_k_$plane" --quiet
listening_port "$tmp/coord_k_$plane.log"
coord=$last_pid
start kill_a_$plane "$troupe" node --join "127.0.0.1:$port" --name a
node_a=$last_pid
start kill_b_$plane "$troupe" node --join "127.0.0.1:$port" --name b
node_b=$last_pid
wait_for_steps "$tmp/dist_k_$plane"
kill -9 $node_b
finish $coord 20
check "killed node ($plane)" $status 1 "$tmp/coord_k_$plane.log" "(node b) failed"
# A killed process's connection drops at once: the run's own records show the failure within
# a few seconds of run time after the last step.
ended_by_failure "killed node ($plane)" "$tmp/dist_k_$plane" "node b" 2000 3
[ "$(summary_field "$tmp/dist_k_$plane" status)" = failed ] && pass ||
  fail "killed node ($plane): summary status"
summary_field "$tmp/dist_k_$plane" error | grep -qF "node b" && pass ||
  fail "killed node ($plane): summary error"
finish $node_a 15
check "survivor of a killed node ($plane)" $status 1 "$tmp/kill_a_$plane.log" "the run failed: "
# ... and says why (it said "the run failed", nothing more).
log_has "survivor of a killed node ($plane): the reason" "$tmp/kill_a_$plane.log" "(node b) failed"

# A hung node (stopped): found by heartbeats within cluster.node_timeout_s.
start coord_h_$plane "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --set training.steps=2000 --set faults.slow_worker=0 --set faults.slow_ms=20 "${plane_set[@]}" \
  --set cluster.node_timeout_s=1 --out "$tmp/dist_h_$plane" --quiet
listening_port "$tmp/coord_h_$plane.log"
coord=$last_pid
start hang_a_$plane "$troupe" node --join "127.0.0.1:$port" --name a
start hang_b_$plane "$troupe" node --join "127.0.0.1:$port" --name b
node_b=$last_pid
wait_for_steps "$tmp/dist_h_$plane"
kill -STOP $node_b
finish $coord 20
kill -9 $node_b 2>/dev/null
check "hung node ($plane)" $status 1 "$tmp/coord_h_$plane.log" "(node b) failed"
# Heartbeats find it: run time from the last step to the failure record is at most
# node_timeout_s (1) plus a generous 3 s.
ended_by_failure "hung node ($plane)" "$tmp/dist_h_$plane" "node b" 2000 4
done
grep -qF "socket ring, plain TCP to 127.0.0.1:" "$tmp/coord_k_tcp.log" && pass ||
  fail "cluster.shared_memory=false: the gradients did not take the socket ring"

# --- nodes that refuse the socket ring (as a firewall would): the ring over actors, same weights -
start coord_f "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --set cluster.shared_memory=false --set faults.refuse_socket_ring=true \
  --token-file "$tmp/token" --out "$tmp/dist_f" --quiet
listening_port "$tmp/coord_f.log"
coord=$last_pid
start refuse_a "$troupe" node --join "127.0.0.1:$port" --name a --threads 1 --token-file "$tmp/token"
start refuse_b "$troupe" node --join "127.0.0.1:$port" --name b --threads 1 --token-file "$tmp/token"
finish $coord 90
check "socket ring refused" $status 0 "$tmp/coord_f.log" \
  "the socket ring could not be formed (node a: "
grep -F "the socket ring could not be formed" "$tmp/coord_f.log" |
  grep -F "refused to listen (faults.refuse_socket_ring)" | grep -qF "the ring runs over actors" &&
  pass || fail "socket ring refused: the log does not say why"
grep -qF "ring link a -> b (127.0.0.1:" "$tmp/coord_f.log" && pass ||
  fail "socket ring refused: no direct link of the ring over actors"
same_weights "socket ring refused, ring over actors" "$tmp/local2" "$tmp/dist_f"

# --- a step that never completes while heartbeats go on: ended by cluster.step_timeout_s -------
# Worker 1 takes 8 s over every step (a stalled link would hold it for ever); node_timeout_s
# cannot see it, since node b's heartbeats go on.
start coord_s "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --set training.steps=2000 --set faults.slow_worker=1 --set faults.slow_ms=8000 \
  --set cluster.step_timeout_s=1.5 --out "$tmp/dist_s" --quiet
listening_port "$tmp/coord_s.log"
coord=$last_pid
start stall_a "$troupe" node --join "127.0.0.1:$port" --name a
start stall_b "$troupe" node --join "127.0.0.1:$port" --name b
t0=$SECONDS
finish $coord 30
check "stalled step" $status 1 "$tmp/coord_s.log" \
  "without a completed step since the start (the limit: 1.5 s, cluster.step_timeout_s)"
check "stalled step names its worker" $status 1 "$tmp/coord_s.log" "worker 1 (node b)"
# Both nodes are on this host: the replicas wait in shared memory, not in a ring link.
check "stalled step names the shared-memory sum" $status 1 "$tmp/coord_s.log" \
  "they wait on each other in the shared-memory sum of this host's nodes"
# Its first step alone would take 8 s, the whole run hours: the message says no step completed,
# and the run ended in seconds, not hours (20 s: room for 3 processes starting on a busy
# machine; 9 s seen with the load average at 8, more on CI's).
[ $((SECONDS - t0)) -le 20 ] && pass || fail "the stalled step ended the run after $((SECONDS - t0)) s"
summary_field "$tmp/dist_s" error | grep -qF "furthest behind" && pass || fail "stalled step: summary error"

# --- nodes that do not come; bad addresses; a public listener without a token ----------------
# Node a waits for the coordinator before it listens: started after it, a node still loading
# LibTorch on a busy machine (CI's: seconds) could miss the 2 s and fail the check by chance.
port=$(free_port)
start lonely "$troupe" node --join "127.0.0.1:$port" --name a --connect-timeout 60
wait_for_line "$tmp/lonely.log" "waiting for the coordinator" 60 || fail "node a did not start"
start coord_j "$troupe" coordinator "$tmp/job.json" --listen "127.0.0.1:$port" \
  --set cluster.join_timeout_s=2 --out "$tmp/dist_j" --quiet
coord=$last_pid
finish $coord 20
check "join timeout" $status 1 "$tmp/coord_j.log" "1 of 2 node(s) joined within 2 s (joined: a)"
finish $last_pid 15
check "node of a run that never started" $status 1 "$tmp/lonely.log" "the run failed"

start nobody "$troupe" node --join "127.0.0.1:$(free_port)" --name x --connect-timeout 1
finish $last_pid 20
check "nothing listens" $status 1 "$tmp/nobody.log" "cannot reach the coordinator"
start badjoin "$troupe" node --join "127.0.0.1:99999"
finish $last_pid 10
check "bad --join" $status 2 "$tmp/badjoin.log" "--join: expected HOST:PORT"
start noprocesses "$troupe" node --join "127.0.0.1:1" --processes 0
finish $last_pid 10
check "--processes 0" $status 2 "$tmp/noprocesses.log" "--processes: Value 0 not in range"
# A library that starts a thread as it loads (preloaded here) makes forking unsafe: refused.
cat >"$tmp/early_thread.c" <<'C'
#include <pthread.h>
#include <unistd.h>
static void* idle(void* arg) { for (;;) pause(); return arg; }
__attribute__((constructor)) static void start(void) { pthread_t t; pthread_create(&t, 0, idle, 0); }
C
if cc -shared -fPIC -o "$tmp/early_thread.so" "$tmp/early_thread.c" -lpthread; then
  start early env LD_PRELOAD="$tmp/early_thread.so" "$troupe" node --join "127.0.0.1:1" \
    --processes 2 --connect-timeout 1
  finish $last_pid 10
  check "--processes with a thread running" $status 1 "$tmp/early.log" \
    "already runs 2 threads before it starts the nodes"
else
  fail "cannot build the preloaded library of the early-thread check"
fi
start public env -u TROUPE_TOKEN "$troupe" coordinator "$tmp/job.json" --listen 0.0.0.0:0 \
  --out "$tmp/dist_p"
finish $last_pid 10
check "public without token" $status 2 "$tmp/public.log" "needs a token"
start nocluster "$troupe" coordinator "$tmp/local.json" --listen 127.0.0.1:0 \
  --out "$tmp/dist_n"
finish $last_pid 10
check "coordinator without cluster.nodes" $status 2 "$tmp/nocluster.log" "/cluster/nodes"
start plainrun "$troupe" run "$tmp/job.json" --out "$tmp/dist_r"
finish $last_pid 10
check "cluster job without nodes" $status 2 "$tmp/plainrun.log" "--local-nodes"

report cluster_test
