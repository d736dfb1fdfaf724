#!/usr/bin/env bash
# A node's join captured on a plaintext link and replayed (issue 39, row 13): node a joins a
# first coordinator through a proxy that records every byte it sends; those bytes, replayed
# against a second coordinator with the same token, must be refused (the join proves the token
# over a challenge that coordinator gave that connection, and the replay answers an old one),
# and the real a must then join it and finish the run. Before joins carried a proof, the replay
# took a's place and the real a was refused.
#   join_replay_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"

cat >"$tmp/job.json" <<'JSON'
{"name": "replay", "seed": 3, "model": {"type": "mlp", "hidden": [16]},
 "data": {"type": "synthetic", "train_samples": 512, "test_samples": 128},
 "training": {"steps": 6, "batch_size": 32},
 "parallelism": {"policy": "sync", "replicas": 1},
 "cluster": {"nodes": 1, "join_timeout_s": 30}}
JSON
echo "s3cret-token" >"$tmp/token"

# record LISTEN_PORT_FILE TARGET_PORT OUT: a proxy on a free port (written to LISTEN_PORT_FILE)
# that forwards one connection to TARGET_PORT and writes what the client sent to OUT.
cat >"$tmp/record.py" <<'PY'
import socket, sys, threading
port_file, target, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
server = socket.socket(); server.bind(("127.0.0.1", 0)); server.listen(1)
open(port_file, "w").write(str(server.getsockname()[1]))
client, _ = server.accept()
upstream = socket.create_connection(("127.0.0.1", target))
sent = bytearray()
def pump(a, b, keep):
    try:
        while True:
            data = a.recv(65536)
            if not data:
                break
            if keep is not None:
                keep.extend(data)
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try: s.shutdown(socket.SHUT_RDWR)
        except OSError: pass
back = threading.Thread(target=pump, args=(upstream, client, None), daemon=True)
back.start()
pump(client, upstream, sent)
open(out, "wb").write(bytes(sent))
PY

# Run 1: node a joins through the recording proxy.
start coord1 "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 --token-file "$tmp/token" \
  --out "$tmp/run1" --quiet
coord1=$last_pid
listening_port "$tmp/coord1.log"
start proxy /usr/bin/python3 "$tmp/record.py" "$tmp/proxy.port" "$port" "$tmp/join.bytes"
proxy=$last_pid
for _ in $(seq 50); do [ -s "$tmp/proxy.port" ] && break; sleep 0.1; done
start node1 "$troupe" node --join "127.0.0.1:$(cat "$tmp/proxy.port")" --name a --threads 1 \
  --token-file "$tmp/token"
finish $coord1 60
check "run 1, node a through the recorder" $status 0 "$tmp/coord1.log" "node a joined"
finish $proxy 15
[ -s "$tmp/join.bytes" ] && pass || fail "the recorder captured nothing"

# Run 2: the captured bytes first, then the real a.
start coord2 "$troupe" coordinator "$tmp/job.json" --listen 127.0.0.1:0 --token-file "$tmp/token" \
  --out "$tmp/run2" --quiet
coord2=$last_pid
listening_port "$tmp/coord2.log"
/usr/bin/python3 - "$port" "$tmp/join.bytes" <<'PY' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.sendall(open(sys.argv[2], "rb").read())
time.sleep(4)  # held open: a replay that got in would keep a's place
PY
replayer=$!
pids+=($replayer)
wait_for_line "$tmp/coord2.log" 'refused a join: node "a"' 10 && pass ||
  fail "the replayed join was not refused: $(tail -5 "$tmp/coord2.log")"
grep -qF 'node a joined' "$tmp/coord2.log" && fail "the replay joined as a" || pass
start node2 "$troupe" node --join "127.0.0.1:$port" --name a --threads 1 --token-file "$tmp/token"
finish $coord2 60
check "run 2, the real node a after the replay" $status 0 "$tmp/coord2.log" "node a joined"
finish $last_pid 15
check "the real node a" $status 0 "$tmp/node2.log" "the run succeeded"
wait $replayer 2>/dev/null

report join_replay_test
