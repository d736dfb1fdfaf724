#!/usr/bin/env bash
# Runs a job over emulated hosts on this one machine: H network namespaces, each a "host" with
# its own address on a switch, its own /dev/shm, and a link shaped with tc; K `troupe node`
# processes per host, and the coordinator on host 0.
#
#   scripts/emulate_hosts.sh --hosts H --nodes-per-host K [--rate R] [--delay D]
#       [--threads-per-node T] [--cut-link HOST@STEP] [--timeout S] [--logs DIR]
#       [--troupe PATH] -- JOB.json [--out DIR] [--set KEY=VALUE ...]
#
# What a host is here:
#   - a network namespace "tr<PID>-h<I>" whose one interface, eth0 (10.77.0.<I+1>/24), is a veth
#     pair plugged into a bridge that lives in a namespace of its own ("tr<PID>-sw"), so no
#     address, route or packet of this machine's own network is touched;
#   - a mount namespace of its own holding a private tmpfs on /dev/shm: nodes on one host can
#     sum through shared memory (cluster.shared_memory), nodes on different hosts cannot, as
#     between machines;
#   - --rate R (tc's units: 1gbit, 200mbit, 500kbit) shapes both directions of the host's link
#     with a token bucket (tbf), so a host neither sends nor receives faster than R; --delay D
#     (0.2ms, 5ms) adds one-way delay with netem. Where the kernel lacks a queue the script says
#     which and exits 77 (skipped) rather than run an unshaped link under a shaped name.
#
# The coordinator listens on 10.77.0.1 (host 0) with a random token; every node joins with the
# name h<I>n<J>, advertising its host's address, with T compute threads (default 1: H*K nodes
# share this machine's cores). cluster.nodes is set to H*K; the job says parallelism.replicas.
# The job's arguments after `--` go to `troupe coordinator` as given (--out, --set, --resume);
# without --out the run goes to runs/NAME-hosts-HxK-TIMESTAMP, printed at the end.
#
# --cut-link HOST@STEP takes host HOST's link down (`ip link set down`, both ends) once the run
# has recorded step STEP: the host's nodes are then lost to the coordinator, as when a rack's
# switch fails. --timeout S (default 3600) bounds the whole run.
#
# Exits with the coordinator's status (124 when the timeout ended it), 2 for a bad command line,
# 77 where this machine cannot emulate hosts (not root, no namespaces, no tbf or netem). Every
# namespace and process it made is removed on every exit path (EXIT, INT and TERM traps). Node
# logs go to --logs DIR, else to a temporary folder that is removed when the run succeeded and
# kept (and named) when it did not.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
hosts=
per_host=
rate=
delay=
threads=1
cut=
time_limit=3600
logs=
troupe="$here/../build/apps/troupe"

usage() {  # usage [STATUS]: the synopsis of the header, on stderr
  sed -n '6,8p' "$0" | sed 's/^# *//' >&2
  exit "${1:-2}"
}
bad() {
  echo "emulate_hosts: $*" >&2
  exit 2
}
unable() {
  echo "emulate_hosts: skipped: $*" >&2
  exit 77
}
is_count() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

while [ $# -gt 0 ]; do
  case $1 in
    --hosts) hosts=${2:-}; shift 2 || usage ;;
    --nodes-per-host) per_host=${2:-}; shift 2 || usage ;;
    --rate) rate=${2:-}; shift 2 || usage ;;
    --delay) delay=${2:-}; shift 2 || usage ;;
    --threads-per-node) threads=${2:-}; shift 2 || usage ;;
    --cut-link) cut=${2:-}; shift 2 || usage ;;
    --timeout) time_limit=${2:-}; shift 2 || usage ;;
    --logs) logs=${2:-}; shift 2 || usage ;;
    --troupe) troupe=${2:-}; shift 2 || usage ;;
    --) shift; break ;;
    -h | --help) usage 0 ;;
    *) bad "unknown option '$1' (the job and its arguments come after --)" ;;
  esac
done
[ $# -ge 1 ] || bad "no job: give it after --, e.g. -- configs/fashion_mlp_sync.json"
job=$1
shift
is_count "$hosts" && [ "$hosts" -le 200 ] || bad "--hosts must be 1 to 200, got '$hosts'"
is_count "$per_host" && [ "$per_host" -le 64 ] ||
  bad "--nodes-per-host must be 1 to 64, got '$per_host'"
is_count "$threads" || bad "--threads-per-node must be a positive count, got '$threads'"
is_count "$time_limit" || bad "--timeout must be a positive number of seconds, got '$time_limit'"
[ -z "$rate" ] || [[ $rate =~ ^[0-9]+(\.[0-9]+)?(bit|kbit|mbit|gbit)$ ]] ||
  bad "--rate must be a number and bit, kbit, mbit or gbit (tc's units), got '$rate'"
[ -z "$delay" ] || [[ $delay =~ ^[0-9]+(\.[0-9]+)?(us|ms|s)$ ]] ||
  bad "--delay must be a number and us, ms or s, got '$delay'"
cut_host=
cut_step=
if [ -n "$cut" ]; then
  [[ $cut =~ ^([0-9]+)@([0-9]+)$ ]] || bad "--cut-link must be HOST@STEP, e.g. 1@50, got '$cut'"
  cut_host=${BASH_REMATCH[1]}
  cut_step=${BASH_REMATCH[2]}
  [ "$cut_host" -lt "$hosts" ] || bad "--cut-link host $cut_host: the hosts are 0 to $((hosts - 1))"
  [ "$cut_host" -ne 0 ] || bad "--cut-link 0@...: host 0 holds the coordinator; cut another"
fi
[ -f "$job" ] || [ "$job" = --resume ] || bad "job file '$job' not found"
[ -x "$troupe" ] || bad "no troupe binary at $troupe (build it, or give --troupe PATH)"
troupe=$(cd "$(dirname "$troupe")" && pwd)/$(basename "$troupe")

# The coordinator's arguments: the job's, with --out found (or added) so that this script knows
# the run folder (metrics.jsonl for --cut-link, the folder printed at the end).
coordinator_args=()
[ "$job" = --resume ] || coordinator_args+=("$(cd "$(dirname "$job")" && pwd)/$(basename "$job")")
[ "$job" != --resume ] || coordinator_args+=(--resume)
out=
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=${2:-}; shift 2 || bad "--out needs a folder" ;;
    --out=*) out=${1#--out=}; shift ;;
    *) coordinator_args+=("$1"); shift ;;
  esac
done
if [ "$job" = --resume ]; then
  out=${coordinator_args[1]:-}
  [ -n "$out" ] || bad "--resume needs the run folder"
else
  [ -n "$out" ] || out="runs/$(basename "$job" .json)-hosts-${hosts}x${per_host}-$(date +%Y%m%d-%H%M%S)"
  coordinator_args+=(--out "$out")
fi

[ "$(id -u)" = 0 ] || unable "needs root to make network namespaces (CAP_NET_ADMIN, CAP_SYS_ADMIN)"
for tool in ip tc nsenter unshare; do
  command -v $tool >/dev/null || unable "needs $tool (Debian's iproute2 and util-linux)"
done

prefix="tr$$"
switch="$prefix-sw"
made_namespaces=()
holders=()
processes=()
work=$(mktemp -d)
[ -n "$logs" ] || logs=$work/logs
mkdir -p "$logs" || bad "cannot make the log folder '$logs'"
keep_logs=0

cleanup() {
  local pid
  for pid in "${processes[@]}" "${holders[@]}"; do kill -9 "$pid" 2>/dev/null; done
  wait 2>/dev/null
  for ns in "${made_namespaces[@]}"; do ip netns del "$ns" 2>/dev/null; done
  if [ "$keep_logs" = 1 ] && [[ $logs == "$work"/* ]]; then
    mkdir -p "${TMPDIR:-/tmp}/troupe-hosts-logs"
    mv "$logs" "${TMPDIR:-/tmp}/troupe-hosts-logs/$prefix" 2>/dev/null &&
      echo "emulate_hosts: node logs kept in ${TMPDIR:-/tmp}/troupe-hosts-logs/$prefix" >&2
  fi
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# make_namespace NS: a new network namespace NS, removed by the trap.
make_namespace() {
  ip netns add "$1" 2>"$work/ns.err" || unable "cannot make a network namespace: $(cat "$work/ns.err")"
  made_namespaces+=("$1")
}

make_namespace "$switch"
ip -n "$switch" link add br0 type bridge 2>"$work/br.err" ||
  unable "cannot make a bridge: $(cat "$work/br.err")"
ip -n "$switch" link set br0 up

# shape NS DEV: the link's queue on DEV in NS (egress): tbf at --rate, netem for --delay.
shape() {
  local ns=$1 dev=$2 err="$work/tc.err"
  if [ -n "$delay" ]; then
    # netem delays and, given a rate, paces too: one queue for both.
    ip netns exec "$ns" tc qdisc add dev "$dev" root netem delay "$delay" ${rate:+rate "$rate"} \
      limit 100000 2>"$err" ||
      unable "--delay needs the kernel's netem queue (sch_netem): $(cat "$err")"
  elif [ -n "$rate" ]; then
    # A burst of 5 ms at the rate (at least 64 KiB, which one TSO segment can be), and at most
    # 100 ms of queue: Ethernet-like, not a bufferbloated link.
    local bits=${rate%bit} scale=1
    case $bits in *k) scale=1000 ;; *m) scale=1000000 ;; *g) scale=1000000000 ;; esac
    local burst
    burst=$(awk -v b="${bits%[kmg]}" -v s=$scale 'BEGIN { x = b * s / 8 / 200; if (x < 65536) x = 65536; printf "%d", x }')
    ip netns exec "$ns" tc qdisc add dev "$dev" root tbf rate "$rate" burst "$burst" \
      latency 100ms 2>"$err" || unable "--rate needs the kernel's tbf queue (sch_tbf): $(cat "$err")"
  fi
}

address() { echo "10.77.0.$(($1 + 1))"; }

for ((i = 0; i < hosts; i++)); do
  ns="$prefix-h$i"
  make_namespace "$ns"
  ip -n "$switch" link add "h$i" type veth peer name eth0 netns "$ns" 2>"$work/veth.err" ||
    unable "cannot make a veth pair: $(cat "$work/veth.err")"
  ip -n "$switch" link set "h$i" master br0 up
  ip -n "$ns" link set lo up
  ip -n "$ns" addr add "$(address $i)/24" dev eth0
  ip -n "$ns" link set eth0 up
  shape "$ns" eth0
  shape "$switch" "h$i"
  # The host's own /dev/shm: a process holding a mount namespace with a private tmpfs there,
  # which every process of the host enters (nsenter) with the network namespace.
  ip netns exec "$ns" unshare -m --propagation private \
    sh -c 'mount -t tmpfs -o mode=1777 tmpfs /dev/shm && echo ready && exec sleep 1000000' \
    >"$work/holder$i" 2>&1 &
  holders+=($!)
done
for ((i = 0; i < hosts; i++)); do
  for _ in $(seq 100); do grep -q ready "$work/holder$i" && break; sleep 0.05; done
  grep -q ready "$work/holder$i" || unable "cannot give host $i its own /dev/shm: $(cat "$work/holder$i")"
done

# on_host I COMMAND...: COMMAND as a process of host I (its network and its /dev/shm).
on_host() {
  local host=$1
  shift
  nsenter -t "${holders[$host]}" -m -n --wd="$PWD" -- "$@"
}

head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/token"
nodes=$((hosts * per_host))
on_host 0 "$troupe" coordinator "${coordinator_args[@]}" --listen "$(address 0):0" --insecure \
  --token-file "$work/token" --set "cluster.nodes=$nodes" > >(tee "$logs/coordinator.log") 2>&1 &
coordinator=$!
processes+=($coordinator)
port=
for _ in $(seq 600); do
  port=$(sed -n 's/.*listening on [^ ]*:\([0-9][0-9]*\).*/\1/p' "$logs/coordinator.log" 2>/dev/null | head -1)
  [ -n "$port" ] || ! kill -0 $coordinator 2>/dev/null && break
  sleep 0.05
done
if [ -z "$port" ]; then
  wait $coordinator
  status=$?
  keep_logs=1
  echo "emulate_hosts: the coordinator did not start listening (exit $status)" >&2
  exit $((status == 0 ? 1 : status))
fi

for ((i = 0; i < hosts; i++)); do
  for ((j = 0; j < per_host; j++)); do
    name="h${i}n$j"
    on_host $i "$troupe" node --join "$(address 0):$port" --name "$name" --listen "$(address $i)" \
      --insecure --threads "$threads" --token-file "$work/token" >"$logs/$name.log" 2>&1 &
    processes+=($!)
  done
done

# last_step: the newest step the run recorded, or -1.
last_step() {
  local s
  s=$(sed -n 's/.*"event":"step".*"step":\([0-9]*\).*/\1/p' "$out/metrics.jsonl" 2>/dev/null | tail -1)
  echo "${s:--1}"
}

deadline=$((SECONDS + time_limit))
while kill -0 $coordinator 2>/dev/null && [ $SECONDS -lt $deadline ]; do
  if [ -n "$cut_step" ] && [ "$(last_step)" -ge "$cut_step" ]; then
    ip -n "$prefix-h$cut_host" link set eth0 down
    ip -n "$switch" link set "h$cut_host" down
    echo "emulate_hosts: cut host $cut_host's link after step $(last_step)" >&2
    cut_step=
  fi
  sleep 0.05
done
if kill -0 $coordinator 2>/dev/null; then
  kill -9 $coordinator 2>/dev/null
  wait $coordinator 2>/dev/null
  status=124
  echo "emulate_hosts: the run did not end within --timeout $time_limit s" >&2
else
  wait $coordinator
  status=$?
fi
# The nodes end on their own once the coordinator is done (a cut host's once it gives up on the
# coordinator); anything left after 30 s is killed by the trap.
node_deadline=$((SECONDS + 30))
for pid in "${processes[@]:1}"; do
  while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $node_deadline ]; do sleep 0.1; done
done
[ $status = 0 ] || keep_logs=1
echo "emulate_hosts: $hosts hosts x $per_host nodes, run in $out, exit $status" >&2
exit $status
