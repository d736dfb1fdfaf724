#!/usr/bin/env bash
# Integration tests of mutual TLS and the connection limits between troupe processes: real
# `troupe coordinator`, `troupe node` and `troupe certs` processes on 127.0.0.1 with free ports.
#   - certs: a CA, keys (0600) and certificates; nothing overwritten; bad names refused.
#   - a 2-node run with --tls gives the in-process run's weights, beside intruders that are each
#     refused and logged with a reason: no certificate, another CA's certificate (a TLS client,
#     and a troupe node of another cluster), another node's name, the coordinator's name, a
#     plaintext CAF client, 1 MB of random bytes, the forged 4 GiB frame header (peak resident
#     memory grows by less than 20 MB), a connection that says nothing (closed after 10 s), and
#     200 connections opened at once and dropped.
#   - without TLS the forged header is refused by the frame limit as well.
#   - --insecure and non-loopback addresses without TLS; --local-nodes --tls.
#   - the probe's findings: Ctrl-C while --local-nodes waits for its nodes ends at once; nodes
#     notice a stopped coordinator after node_timeout_s; a node whose data files are bad fails
#     the run at once with its own error.
# Every process is bounded (`finish`) and killed on exit, pass or fail. Needs Fashion-MNIST and
# /usr/bin/python3 with torch for the weight comparisons.
#   tls_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # absolute: some tests change directory
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"
py=/usr/bin/python3
data=/usr/share/datasets/fashion-mnist

require_fashion_mnist

peak_kb() { awk '/VmHWM/ {print $2}' "/proc/$1/status"; }

same_weights() {  # same_weights WHAT RUN_A RUN_B
  if out=$($py "$here/../python/compare_weights.py" "$2" "$3" 1e-6 2>&1); then
    pass
  else
    fail "$1: weights differ from the in-process run: $out"
  fi
}

summary_field() {  # summary_field RUN_DIR KEY
  $py -c 'import json,sys; print(json.load(open(sys.argv[1] + "/summary.json")).get(sys.argv[2]))' "$1" "$2"
}

# The 32-byte frame header that made an unguarded CAF port allocate 4 GiB, sent without waiting
# for the server to speak first (a TLS server waits for the client).
forged_header() {
  $py - "$1" <<'PY'
import socket, struct, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(0.5)
try:
    s.recv(99)
except OSError:
    pass
s.sendall(struct.pack("!BBBBIQQQ", 1, 0, 0, 0, 0xFFFFFFF0, 0x1234, 0, 0))
time.sleep(2)
PY
}

cat >"$tmp/job.json" <<JSON
{"name": "tls", "seed": 3,
 "model": {"type": "mlp", "hidden": [64]},
 "data": {"type": "fashion_mnist", "path": "$data"},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 30, "batch_size": 60},
 "parallelism": {"policy": "sync", "replicas": 2},
 "cluster": {"nodes": 2, "join_timeout_s": 60, "bucket_mb": 0.05}}
JSON
echo "s3cret-token" >"$tmp/token"
$py -c 'import json,sys; j=json.load(open(sys.argv[1])); del j["cluster"]; json.dump(j, open(sys.argv[2], "w"))' \
  "$tmp/job.json" "$tmp/local.json"
"$troupe" run "$tmp/local.json" --out "$tmp/local" --quiet >/dev/null 2>&1 || fail "in-process run"

# --- troupe certs -----------------------------------------------------------------------------
ca=$tmp/ca
"$troupe" certs init "$ca" >"$tmp/certs.log" 2>&1 || fail "certs init"
for name in coordinator a b; do
  "$troupe" certs issue "$ca" $name >>"$tmp/certs.log" 2>&1 || fail "certs issue $name"
done
[ "$(stat -c %a "$ca/ca.key")" = 600 ] && [ "$(stat -c %a "$ca/a.key")" = 600 ] && pass ||
  fail "keys are not mode 0600: $(ls -l "$ca")"
cp "$ca/a.key" "$tmp/a.key.before"
"$troupe" certs issue "$ca" a >"$tmp/overwrite.log" 2>&1
check "certs issue over an existing key" $? 2 "$tmp/overwrite.log" "never overwrites"
cmp -s "$ca/a.key" "$tmp/a.key.before" && pass || fail "certs issue changed an existing key"
"$troupe" certs init "$ca" >"$tmp/reinit.log" 2>&1
check "certs init over an existing CA" $? 2 "$tmp/reinit.log" "exists"
"$troupe" certs issue "$ca" "../x" >"$tmp/badname.log" 2>&1
check "certs issue with a bad name" $? 2 "$tmp/badname.log" "starts with a letter or a digit"
"$troupe" certs init "$tmp/other" >/dev/null 2>&1 && "$troupe" certs issue "$tmp/other" x >/dev/null 2>&1 ||
  fail "a second CA"

# --- a 2-node run with --tls beside intruders --------------------------------------------------
# cluster.shared_memory=false: the gradients cross the TLS ring links, as between hosts.
start coord "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 --tls "$ca" \
  --set cluster.shared_memory=false --token-file "$tmp/token" --out "$tmp/dist" --quiet
coord=$last_pid
listening_port "$tmp/coord.log"
peak_before=$(peak_kb $coord)
# A connection that says nothing: closed once the handshake deadline (10 s) passes.
cat >"$tmp/idle.py" <<'PY'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.settimeout(30)
t0 = time.time()
data = s.recv(10)
print(f"closed after {time.time() - t0:.1f} s, received {data!r}")
sys.exit(0 if data == b"" and 8 <= time.time() - t0 <= 14 else 1)
PY
start idle $py "$tmp/idle.py" "$port"
idle=$last_pid

forged_header "$port" || fail "could not send the forged header"
$py -c 'import os,socket,sys; s=socket.create_connection(("127.0.0.1", int(sys.argv[1]))); s.sendall(os.urandom(1 << 20))' \
  "$port" 2>/dev/null
# TLS clients: without a certificate, and with one that another CA signed.
$py - "$port" "$ca" "$tmp/other" >"$tmp/tls_clients.log" 2>&1 <<'PY'
import socket, ssl, sys
port, ca, other = int(sys.argv[1]), sys.argv[2], sys.argv[3]
for what, cert in (("no certificate", None), ("another CA's certificate", other + "/x")):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.load_verify_locations(ca + "/ca.pem")
    if cert:
        ctx.load_cert_chain(cert + ".pem", cert + ".key")
    try:
        s = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)))
        s.settimeout(5)
        print(what, "read", s.recv(10))
    except (OSError, ssl.SSLError) as e:
        print(what, "refused:", e)
PY
grep -q "no certificate refused" "$tmp/tls_clients.log" && pass ||
  fail "a TLS client without a certificate was not refused: $(cat "$tmp/tls_clients.log")"
grep -q "another CA's certificate refused" "$tmp/tls_clients.log" && pass ||
  fail "a TLS client with another CA's certificate was not refused: $(cat "$tmp/tls_clients.log")"

start stranger "$troupe" node --join "127.0.0.1:$port" --name x --tls "$tmp/other" \
  --token-file "$tmp/token" --connect-timeout 2
finish $last_pid 30
check "a node of another CA" $status 1 "$tmp/stranger.log" "certificate verify failed"
start impostor "$troupe" node --join "127.0.0.1:$port" --name a --claim-name b --tls "$ca" \
  --token-file "$tmp/token"
finish $last_pid 30
check "a node presenting another node's name" $status 1 "$tmp/impostor.log" \
  'refused: node "b": its connection presented the certificate of "a"'
start as_coord "$troupe" node --join "127.0.0.1:$port" --name coordinator --tls "$ca" \
  --token-file "$tmp/token"
finish $last_pid 30
check "a node named coordinator" $status 1 "$tmp/as_coord.log" "that name is the coordinator's"
start plaintext "$troupe" node --join "127.0.0.1:$port" --name p --token-file "$tmp/token" \
  --connect-timeout 1
finish $last_pid 30
check "a plaintext CAF client" $status 1 "$tmp/plaintext.log" "does the coordinator run with --tls? then this node needs --tls too"
# Each refusal, logged with its reason, before the flood below fills the log.
log_has "forged header / random bytes / plaintext client" "$tmp/coord.log" "not TLS (wrong version number)"
log_has "no certificate" "$tmp/coord.log" "peer did not return a certificate"
log_has "another CA's certificate" "$tmp/coord.log" "certificate verify failed"
log_has "a node of another CA" "$tmp/coord.log" "alert unknown ca"
log_has "another node's name" "$tmp/coord.log" 'its connection presented the certificate of "a"'
# 200 connections at once, held, then dropped: those past the pending limit are closed at once.
$py - "$port" <<'PY' || fail "200 connections: none was closed at once"
import socket, sys, time
socks = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(200)]
time.sleep(1)
closed = 0
for s in socks:
    s.setblocking(False)
    try:
        closed += s.recv(1) == b""
    except BlockingIOError:
        pass
    except OSError:
        closed += 1
for s in socks:
    s.close()
sys.exit(0 if closed > 0 else 1)
PY
log_has "200 connections" "$tmp/coord.log" "connections are already in their handshakes"
finish $idle 20
check "an idle connection" $status 0 "$tmp/idle.log" "closed after"
log_has "an idle connection" "$tmp/coord.log" "no handshake within 10 s"
peak_after=$(peak_kb $coord)
if [ $((peak_after - peak_before)) -lt 20480 ]; then pass; else
  fail "the coordinator's peak resident memory grew by $(((peak_after - peak_before) / 1024)) MB"
fi

start node_a "$troupe" node --join "127.0.0.1:$port" --name a --tls "$ca" --token-file "$tmp/token"
node_a=$last_pid
start node_b "$troupe" node --join "127.0.0.1:$port" --name b --tls "$ca" --token-file "$tmp/token"
node_b=$last_pid
finish $coord 120
check "sync 2 nodes with TLS beside intruders" $status 0 "$tmp/coord.log" "ring link a -> b"
grep -E "ring link a -> b .*TLS 1.3: gradients encrypted" "$tmp/coord.log" >/dev/null && pass ||
  fail "the ring link's log line does not say its gradients are encrypted: $(grep "ring link" "$tmp/coord.log")"
! grep -qF "not encrypted" "$tmp/coord.log" && pass || fail "a link without TLS under --tls"
log_has "TLS coordinator" "$tmp/coord.log" "(TLS)"
finish $node_a 15
check "node a" $status 0 "$tmp/node_a.log" "the run succeeded"
finish $node_b 15
check "node b" $status 0 "$tmp/node_b.log" "the run succeeded"
same_weights "sync 2 nodes with TLS" "$tmp/local" "$tmp/dist"

# --- without TLS the frame limit refuses the forged header too ---------------------------------
start plain "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --set cluster.join_timeout_s=4 --out "$tmp/dist_plain" --quiet
listening_port "$tmp/plain.log"
plain=$last_pid
peak_before=$(peak_kb $plain)
forged_header "$port"
peak_after=$(peak_kb $plain)
log_has "forged header without TLS" "$tmp/plain.log" "announced a message of 4294967280 bytes"
if [ $((peak_after - peak_before)) -lt 20480 ]; then pass; else
  fail "without TLS the peak resident memory grew by $(((peak_after - peak_before) / 1024)) MB"
fi
finish $plain 20

# --- --insecure, non-loopback addresses, bad TLS options ---------------------------------------
start public "$troupe" coordinator "$tmp/job.json" --listen 0.0.0.0:0 --token-file "$tmp/token" \
  --out "$tmp/dist_public"
finish $last_pid 10
check "public without TLS" $status 2 "$tmp/public.log" "need mutual TLS (--tls DIR"
start insecure "$troupe" coordinator "$tmp/job.json" --listen 0.0.0.0:0 --token-file "$tmp/token" \
  --insecure --set cluster.join_timeout_s=1 --out "$tmp/dist_insecure" --quiet
finish $last_pid 20
check "public with --insecure" $status 1 "$tmp/insecure.log" "warning: --listen 0.0.0.0:0: --insecure"
log_has "public with --insecure listens" "$tmp/insecure.log" "listening on 0.0.0.0"
start public_tls "$troupe" coordinator "$tmp/job.json" --listen 0.0.0.0:0 --tls "$ca" \
  --token-file "$tmp/token" --set cluster.join_timeout_s=1 --out "$tmp/dist_public_tls" --quiet
finish $last_pid 20
check "public with TLS" $status 1 "$tmp/public_tls.log" "(TLS), waiting for 2 node(s)"
grep -q "warning" "$tmp/public_tls.log" && fail "public with TLS warned" || pass
start node_public "$troupe" node --join "127.0.0.1:$(free_port)" --name a --listen 0.0.0.0
finish $last_pid 10
check "node listening publicly without TLS" $status 2 "$tmp/node_public.log" "need mutual TLS"
start node_insecure "$troupe" node --join "127.0.0.1:$(free_port)" --name a --listen 0.0.0.0 \
  --insecure --connect-timeout 1
finish $last_pid 20
check "node with --insecure" $status 1 "$tmp/node_insecure.log" "warning: --listen 0.0.0.0: --insecure"
start noname "$troupe" node --join 127.0.0.1:1 --tls "$ca"
finish $last_pid 10
check "node --tls without --name" $status 2 "$tmp/noname.log" "needs --name NAME"
start badtls "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 --tls "$tmp/other" \
  --out "$tmp/dist_badtls"
finish $last_pid 10
check "coordinator --tls without its certificate" $status 2 "$tmp/badtls.log" "coordinator.pem: missing"
start run_tls_alone "$troupe" run "$tmp/local.json" --tls --out "$tmp/dist_alone"
finish $last_pid 10
check "run --tls without --local-nodes" $status 2 "$tmp/run_tls_alone.log" "--local-nodes"
# gloo's connections cannot be encrypted: asking for both is refused before any node starts
# (exit 2, no folder; it failed the run once the nodes had joined).
start tls_gloo "$troupe" run "$tmp/job.json" --local-nodes 2 --tls \
  --set cluster.collective=gloo --out "$tmp/dist_tls_gloo"
finish $last_pid 30
check "--tls with cluster.collective gloo" $status 2 "$tmp/tls_gloo.log" \
  '/cluster/collective: "gloo" cannot run under --tls'
[ ! -e "$tmp/dist_tls_gloo" ] && pass || fail "--tls with gloo made a folder"

# --- --local-nodes --tls: a CA for the run, gone afterwards -------------------------------------
before=$(ls -d "${TMPDIR:-/tmp}"/troupe-tls-* 2>/dev/null | sort)
start local_tls "$troupe" run "$tmp/job.json" --local-nodes 2 --tls --out "$tmp/dist_local" --quiet
finish $last_pid 90
check "--local-nodes 2 --tls" $status 0 "$tmp/local_tls.log" "succeeded"
same_weights "--local-nodes 2 --tls" "$tmp/local" "$tmp/dist_local"
log_has "--local-nodes 2 --tls" "$tmp/dist_local/nodes/local-1.log" "the run succeeded"
after=$(ls -d "${TMPDIR:-/tmp}"/troupe-tls-* 2>/dev/null | sort)
[ "$before" = "$after" ] && pass || fail "--local-nodes --tls left its certificates behind"

# --- Ctrl-C while --local-nodes waits for its nodes: over at once, no node left ----------------
start sigint "$troupe" run "$tmp/job.json" --local-nodes 2 --tls --out "$tmp/dist_sigint"
sigint=$last_pid
listening_port "$tmp/sigint.log"
t0=$SECONDS
kill -INT $sigint
finish $sigint 20
check "SIGINT while waiting for nodes" $status 130 "$tmp/sigint.log" "interrupted while waiting for nodes"
# Within seconds, not the 60 s of cluster.join_timeout_s (10 s: room for a busy machine).
[ $((SECONDS - t0)) -le 10 ] && pass || fail "SIGINT while waiting for nodes took $((SECONDS - t0)) s"
pgrep -f "node --join 127.0.0.1:$port " >/dev/null && fail "local nodes outlived an interrupted run" ||
  pass

# --- a stopped coordinator: the nodes notice after node_timeout_s (1 s), not 10 s ---------------
start coord_s "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 \
  --set training.steps=2000 --set faults.slow_worker=0 --set faults.slow_ms=20 \
  --set cluster.node_timeout_s=1 --out "$tmp/dist_s" --quiet
listening_port "$tmp/coord_s.log"
coord=$last_pid
start stop_a "$troupe" node --join "127.0.0.1:$port" --name a
node_a=$last_pid
start stop_b "$troupe" node --join "127.0.0.1:$port" --name b
node_b=$last_pid
for _ in $(seq 300); do grep -q '"step"' "$tmp/dist_s/metrics.jsonl" 2>/dev/null && break; sleep 0.1; done
kill -STOP $coord
t0=$SECONDS
finish $node_a 15
check "a node of a stopped coordinator" $status 1 "$tmp/stop_a.log" "lost the coordinator"
[ $((SECONDS - t0)) -le 8 ] && pass || fail "the node noticed the stopped coordinator after $((SECONDS - t0)) s"
finish $node_b 15
kill -9 $coord 2>/dev/null

# --- one node whose own data files are bad: the run fails at once with that node's error -------
mkdir -p "$tmp/good/data" "$tmp/bad/data"
for f in "$data"/*; do
  ln -s "$f" "$tmp/good/data/$(basename "$f")"
  ln -s "$f" "$tmp/bad/data/$(basename "$f")"
done
rm "$tmp/bad/data/train-images-idx3-ubyte.gz"
echo "not a gzip file" >"$tmp/bad/data/train-images-idx3-ubyte.gz"
sed "s|\"path\": \"$data\"|\"path\": \"data\"|" "$tmp/job.json" >"$tmp/good/job.json"
start coord_d env -C "$tmp/good" "$troupe" coordinator job.json --listen 127.0.0.1:0 \
  --out "$tmp/dist_d" --quiet
listening_port "$tmp/coord_d.log"
coord=$last_pid
t0=$SECONDS
start data_a env -C "$tmp/good" "$troupe" node --join "127.0.0.1:$port" --name a
start data_b env -C "$tmp/bad" "$troupe" node --join "127.0.0.1:$port" --name b
finish $coord 30
check "a node with bad data" $status 1 "$tmp/coord_d.log" "node b cannot take the job: "
log_has "a node with bad data: the file" "$tmp/coord_d.log" "train-images-idx3-ubyte.gz"
# At once, not after cluster.join_timeout_s (60 s): 20 s leave room for 3 processes starting on
# a busy machine.
[ $((SECONDS - t0)) -le 20 ] && pass || fail "the bad data was reported after $((SECONDS - t0)) s"
summary_field "$tmp/dist_d" error | grep -qF "node b cannot take the job" && pass ||
  fail "summary.json lacks node b's error: $(summary_field "$tmp/dist_d" error)"

report tls_test
