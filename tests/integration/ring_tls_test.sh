#!/usr/bin/env bash
# The socket ring under --tls is encrypted, checked on the wire: in a network namespace of its
# own (unshare -n: only this test's traffic on its loopback), a coordinator and two nodes sum
# sync gradients over the socket ring (cluster.shared_memory=false) while a packet reader counts
# the frames that carry the ring's chunk-header magic ("TRPRINF1"). Plain TCP shows it (the
# control: the reader sees the ring's traffic); under --tls no frame does, the log names the
# ring's links "TLS 1.3: gradients encrypted", and both runs end within 1e-6 of the in-process
# run. Skipped (77) where the machine allows no namespace.
#   ring_tls_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
source "$(dirname "$0")/../lib/skip.sh"
if [ "${TROUPE_IN_NETNS:-}" != 1 ]; then
  unshare -n true 2>/dev/null || skip "no network namespace (unshare -n needs root)"
  TROUPE_IN_NETNS=1 exec unshare -n bash "$0" "$@"
fi
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"
require_fashion_mnist
require_python_torch
ip link set lo up || skip "cannot bring up loopback in the namespace"

cat >"$tmp/job.json" <<'JSON'
{"name": "ring_tls", "seed": 3,
 "model": {"type": "mlp", "hidden": [64]},
 "data": {"type": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist"},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 60, "batch_size": 60},
 "parallelism": {"policy": "sync", "replicas": 2}}
JSON
timeout 120 "$troupe" run "$tmp/job.json" --out "$tmp/ref" --quiet >/dev/null 2>&1 ||
  fail "the in-process reference run"
"$troupe" certs init "$tmp/certs" >/dev/null &&
  for n in coordinator a b; do "$troupe" certs issue "$tmp/certs" $n >/dev/null; done ||
  fail "troupe certs"
echo "s3cret-token" >"$tmp/token"
magic=$(printf 'TRPRINF1' | od -An -tx1 | tr -d ' \n')

# sniffed_run NAME [--tls DIR]: the job over a coordinator and nodes a, b into $tmp/NAME while
# the reader counts frames with the magic; sets `status` (the coordinator's) and `seen`.
sniffed_run() {
  local name=$1 reader coord
  shift
  rm -f "$tmp/ready"
  /usr/bin/python3 "$here/../python/sniff_for.py" lo 30 "$magic" "$tmp/ready" >"$tmp/$name.sniff" &
  reader=$!
  pids+=($reader)
  for _ in $(seq 100); do [ -e "$tmp/ready" ] && break; sleep 0.1; done
  [ -e "$tmp/ready" ] || fail "$name: the packet reader did not start"
  start "coord_$name" "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 "$@" \
    --token-file "$tmp/token" --set cluster.nodes=2 --set cluster.shared_memory=false \
    --out "$tmp/$name" --quiet
  coord=$last_pid
  listening_port "$tmp/coord_$name.log"
  local tls_args=()
  [ $# -gt 0 ] && tls_args=("$@")
  for n in a b; do
    start "${name}_$n" "$troupe" node --join "127.0.0.1:$port" --name $n --threads 1 \
      --token-file "$tmp/token" "${tls_args[@]}"
  done
  finish $coord 120
  kill -TERM $reader 2>/dev/null  # it prints its count and ends
  wait $reader 2>/dev/null
  seen=$(cut -d' ' -f1 "$tmp/$name.sniff")
}

sniffed_run plain
check "plain socket ring" $status 0 "$tmp/coord_plain.log" "socket ring, plain TCP to 127.0.0.1:"
[ "${seen:-0}" -gt 0 ] && pass ||
  fail "plain: the packet reader saw no chunk header ($(cat "$tmp/plain.sniff")): it cannot judge TLS"
out=$(/usr/bin/python3 "$here/../python/compare_weights.py" "$tmp/ref" "$tmp/plain" 1e-6 2>&1) &&
  pass || fail "plain: $out"

sniffed_run tls --tls "$tmp/certs"
check "socket ring under --tls" $status 0 "$tmp/coord_tls.log" \
  "ring link a -> b (rank 0 -> 1: socket ring to 127.0.0.1:"
grep -F "ring link a -> b" "$tmp/coord_tls.log" | grep -qF "TLS 1.3: gradients encrypted" && pass ||
  fail "tls: the ring link's line does not say it is encrypted: $(grep 'ring link' "$tmp/coord_tls.log")"
[ "${seen:-1}" = 0 ] && pass ||
  fail "tls: $(cut -d' ' -f1 "$tmp/tls.sniff") frames carried a chunk header in the clear"
out=$(/usr/bin/python3 "$here/../python/compare_weights.py" "$tmp/ref" "$tmp/tls" 1e-6 2>&1) &&
  pass || fail "tls: $out"

report "socket ring under TLS"
