#!/usr/bin/env bash
# Chaos: a sync run of 3 nodes under cluster.on_node_loss "continue" while, every few seconds, a
# random node is killed (SIGKILL) or stopped (SIGSTOP past node_timeout_s, then SIGCONT: it is
# fenced and told to leave), and a node of the same name is started again to replace it. The
# run must complete every step exactly once (and every row of each of its 10 epochs: summary.json's
# rows_per_epoch), with every failure in summary.json recovered and
# identical replicas (the driver checks them at the end); the recovery times' p50/p99 are
# printed. Real processes on 127.0.0.1, bounded (about 2 minutes), killed on exit.
#   chaos_test.sh PATH/TO/troupe [EVENTS]
set -uo pipefail
troupe=$1
events=${2:-8}
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"

require_fashion_mnist

# An evaluation every 5 steps stretches the run (several seconds per 1000 steps) without
# changing its weights; the run is long enough for every event to land while it trains, and the
# chaos stops once the events are spent so that the run then ends by itself.
cat >"$tmp/job.json" <<'JSON'
{"name": "chaos", "seed": 5,
 "model": {"type": "mlp", "hidden": [64]},
 "data": {"type": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist"},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 10000, "batch_size": 60, "eval_interval": 5},
 "parallelism": {"policy": "sync", "replicas": 3},
 "cluster": {"nodes": 3, "join_timeout_s": 30, "bucket_mb": 0.05, "node_timeout_s": 1,
             "on_node_loss": "continue"}}
JSON
echo "s3cret" >"$tmp/token"
start coord "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --token-file "$tmp/token" --out "$tmp/run" --quiet
listening_port "$tmp/coord.log"
coord=$last_pid
declare -A node_pid starts=([a]=0 [b]=0 [c]=0)
generation=0
start_node() {
  generation=$((generation + 1))
  start "node_$1_$generation" "$troupe" node --join "127.0.0.1:$port" --name "$1" \
    --token-file "$tmp/token"
  node_pid[$1]=$last_pid
  starts[$1]=$((starts[$1] + 1))
}
for n in a b c; do start_node $n; done

# The coordinator's log says when a node takes part: at the start, or as a replacement. The
# process of that name now running is in the run once the log says so as many times as a node
# of that name was started: a node is only hit once it trains (one still joining is not a
# node the run lost).
in_run() { grep -cE "node $1 (joined the run at step|joined \()" "$tmp/coord.log"; }
# Every node in the run, none still joining: a node hit while the others' replacements still join
# could be the last one training, and a sync run that loses its last replica has no weights left
# to go on from (it fails, "no worker of the run is left"). Chaos hits a run of 3, never of 1;
# on a busy machine a replacement takes longer to join than the seconds between two events.
all_in_run() {
  local n
  for n in a b c; do [ "$(in_run $n)" -ge "${starts[$n]}" ] || return 1; done
}

# Chaos starts once the run trains: a node lost while the run is still forming is one the run
# never had (it waits for another), not a failure to count.
for _ in $(seq 600); do
  grep -qF "node(s); training" "$tmp/coord.log" && break
  kill -0 $coord 2>/dev/null || break
  sleep 0.1
done
grep -qF "node(s); training" "$tmp/coord.log" && pass || fail "the run did not start training"

last_step() {
  grep -o '"event":"step"[^}]*' "$tmp/run/metrics.jsonl" 2>/dev/null | tail -1 |
    grep -o '"step":[0-9]*' | grep -o '[0-9]*$' || echo 0
}

RANDOM=4242
t0=$SECONDS
done_events=0
kills=0
stops=0
while [ $done_events -lt "$events" ] && kill -0 $coord 2>/dev/null; do
  sleep $((2 + RANDOM % 3))
  kill -0 $coord 2>/dev/null || break
  # Not in the run's last 1000 steps (seconds on this machine): a node hit as the run ends may
  # leave after its last step, a loss the run never has to recover from.
  [ "$(last_step)" -lt 9000 ] || break
  names=(a b c)
  victim=${names[$((RANDOM % 3))]} # not in $(...): a subshell would not move $RANDOM on
  all_in_run || continue
  pid=${node_pid[$victim]}
  if [ $((RANDOM % 2)) = 0 ]; then
    kill -9 "$pid"
    kills=$((kills + 1))
    echo "  t=$((SECONDS - t0)) s: kill -9 node $victim"
  else
    kill -STOP "$pid"
    sleep 2.5 # past node_timeout_s (1 s): it is given up on
    kill -CONT "$pid"
    stops=$((stops + 1))
    echo "  t=$((SECONDS - t0)) s: SIGSTOP then SIGCONT node $victim"
  fi
  finish "$pid" 20
  [ $status -ne 124 ] && pass || fail "node $victim did not leave after it was given up on"
  done_events=$((done_events + 1))
  # Its replacement, under the same name.
  kill -0 $coord 2>/dev/null && start_node "$victim"
done
finish $coord $((340 - (SECONDS - t0)))
check "the chaos run" $status 0 "$tmp/coord.log" "succeeded"
[ "$done_events" -ge 3 ] && pass || fail "only $done_events of $events events happened before the run ended"
echo "  $done_events events ($kills kill -9, $stops SIGSTOP) in $((SECONDS - t0)) s"

/usr/bin/python3 - "$tmp/run" "$done_events" <<'PY' >"$tmp/figures.txt" 2>&1
import json, sys
run, events = sys.argv[1], int(sys.argv[2])
records = []
for line in open(run + "/metrics.jsonl"):
    try:
        records.append(json.loads(line))
    except ValueError:
        pass
s = json.load(open(run + "/summary.json"))
print(("pass" if s["status"] == "succeeded" and s["steps"] == 10000 else "fail") +
      f" status {s['status']}, {s['steps']} steps")
steps = [r["step"] for r in records if r.get("event") == "step"]
print(("pass" if sorted(steps) == list(range(10000)) else "fail") + " every step recorded once")
# 10 epochs of Fashion-MNIST's 60,000 rows (1000 steps of 60): each trained once, whoever was
# lost or joined meanwhile.
rows = s.get("rows_per_epoch")
print(("pass" if rows == [60000] * 10 else "fail") + f" rows per epoch {rows}")
failures = s.get("failures", [])
# Every event is one lost node (a stopped node may also be named by the step watchdog first:
# still one loss).
print(("pass" if len(failures) == events else "fail") +
      f" {len(failures)} failures for {events} events: {[f['node'] for f in failures]}")
print(("pass" if all(f.get("recovery_s") is not None for f in failures) else "fail") +
      " every failure recovered")
lost = [r for r in records if r.get("event") == "node_lost"]
joined = [r for r in records if r.get("event") == "node_joined"]
print(("pass" if len(lost) == len(failures) else "fail") + f" {len(lost)} node_lost records")
print(("pass" if len(joined) >= 1 else "fail") + f" {len(joined)} node_joined records")
times = s.get("failure_times", {})
ok = times.get("count") == len(failures) and times.get("recovered") == len(failures)
print(("pass" if ok and times.get("recovery_p99_s") is not None else "fail") +
      f" failure_times {times}")
if ok:
    print(f"info detection p50 {times['detection_p50_s']:.3f} s p99 {times['detection_p99_s']:.3f} s; "
          f"recovery p50 {times['recovery_p50_s']:.3f} s p99 {times['recovery_p99_s']:.3f} s "
          f"over {len(failures)} failures")
PY
while read -r verdict message; do
  case $verdict in
    pass) pass ;;
    info) echo "  $message" ;;
    *) fail "$message" ;;
  esac
done <"$tmp/figures.txt"
for n in a b c; do
  finish "${node_pid[$n]}" 15
  [ $status -ne 124 ] && pass || fail "node $n did not end with the run"
done
report chaos_test
