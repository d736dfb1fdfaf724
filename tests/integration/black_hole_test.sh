#!/usr/bin/env bash
# A path-MTU black hole between nodes: in a network namespace of its own (unshare -n), loopback
# drops every packet larger than 64 KiB and passes the small ones, so heartbeats get through and
# the ring's gradient buckets never do. Without cluster.step_timeout_s such a run sat at step 0
# for good; with it, the run ends within the limit, naming the workers and the ring's links.
# Both nodes run on this host, so cluster.shared_memory=false keeps the gradients on the ring.
# Skipped (77) where the machine allows no namespace or no tbf queue, and where the link does
# not black-hole (the run then completes).
#   black_hole_test.sh PATH/TO/troupe CONFIG(fashion, sync)
set -uo pipefail
troupe=$1
config=$2
if [ "${TROUPE_IN_NETNS:-}" != 1 ]; then
  if ! unshare -n true 2>/dev/null; then
    echo "skipped: no network namespace (unshare -n needs root or user namespaces)"
    exit 77
  fi
  TROUPE_IN_NETNS=1 exec unshare -n bash "$0" "$@"
fi
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"
if [ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]; then
  echo "Fashion-MNIST is not installed (scripts/install_deps.sh installs it)"
  exit 77
fi
ip link set lo up || { echo "skipped: cannot bring up loopback in the namespace"; exit 77; }
if ! tc qdisc add dev lo root tbf rate 200mbit burst 64kb latency 100ms 2>"$tmp/tc.log"; then
  echo "skipped: no tbf queue here: $(cat "$tmp/tc.log")"
  exit 77
fi

echo secret >"$tmp/token"
port=$(free_port)
start coord "$troupe" coordinator "$config" --listen "127.0.0.1:$port" --token-file "$tmp/token" \
  --set cluster.nodes=2 --set parallelism.replicas=2 --set cluster.step_timeout_s=3 \
  --set cluster.shared_memory=false --out "$tmp/run" --quiet
coord=$last_pid
start a "$troupe" node --join "127.0.0.1:$port" --name a --token-file "$tmp/token"
start b "$troupe" node --join "127.0.0.1:$port" --name b --token-file "$tmp/token"
t0=$SECONDS
finish $coord 120
if [ $status -eq 0 ]; then
  echo "skipped: the run completed, the link did not black-hole on this machine"
  exit 77
fi
check "black hole" $status 1 "$tmp/coord.log" \
  "without a completed step since the start (the limit: 3.0 s, cluster.step_timeout_s)"
check "black hole: the ring's links named" $status 1 "$tmp/coord.log" \
  "one of its links holds it up: node a -> node b, node b -> node a"
# The limit, plus start-up (data loading, the roster) and a tick.
[ $((SECONDS - t0)) -le 30 ] && pass || fail "the stalled run ended after $((SECONDS - t0)) s"
report black_hole_test
