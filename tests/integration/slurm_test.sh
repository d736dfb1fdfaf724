#!/usr/bin/env bash
# examples/slurm/troupe.sbatch against a real single-host Slurm: munged, slurmctld and slurmd
# started here as root with a configuration of their own (proctrack/linuxproc, no cgroups,
# ports that are free, state in a scratch folder), the node named "localhost" so that the
# addresses Slurm hands the tasks resolve on any machine. `sbatch --wait` runs the script with
# two tasks: the coordinator on the job's host, two `troupe node`s taking their join address,
# names, address and token from the step's environment. The run must succeed with the
# in-process run's weights (<= 1e-6), the nodes named localhost-task0 and -task1. Every daemon
# is stopped on exit. Skipped (77) without Slurm's and munge's programs (scripts/install_deps.sh
# --tests installs them) or without root.
#   slurm_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")  # the job runs elsewhere
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"

require_fashion_mnist
require_python_torch
for tool in munged slurmctld slurmd sbatch squeue; do
  command -v $tool >/dev/null ||
    skip "no $tool (Debian's slurmctld, slurmd, slurm-client and munge; scripts/install_deps.sh --tests)"
done
[ "$(id -u)" = 0 ] || { echo "skipped: slurmd runs as root here"; exit 77; }

slurm=$tmp/slurm
mkdir -p "$slurm/state" "$slurm/spool" "$slurm/munge"
chmod 700 "$slurm/munge"
# munged refuses a key others can read; the package's key, or one made for this test.
key=/etc/munge/munge.key
if [ ! -r $key ]; then
  key=$slurm/munge.key
  head -c 1024 /dev/urandom >"$key"
  chmod 400 "$key"
fi
ctld_port=$(free_port)
slurmd_port=$(free_port)
cat >"$slurm/slurm.conf" <<EOF
ClusterName=troupetest
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$slurm/munge/socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
StateSaveLocation=$slurm/state
SlurmdSpoolDir=$slurm/spool
SlurmctldPidFile=$slurm/slurmctld.pid
SlurmdPidFile=$slurm/slurmd.pid
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
SlurmctldLogFile=$slurm/slurmctld.log
SlurmdLogFile=$slurm/slurmd.log
NodeName=localhost NodeAddr=127.0.0.1 CPUs=2 State=UNKNOWN
PartitionName=troupe Nodes=ALL Default=YES MaxTime=10 State=UP OverSubscribe=FORCE:4
EOF
export SLURM_CONF=$slurm/slurm.conf

stop_slurm() {
  local f pid
  for f in "$slurm/slurmd.pid" "$slurm/slurmctld.pid" "$slurm/munge/pid"; do
    pid=$(cat "$f" 2>/dev/null) && kill "$pid" 2>/dev/null
  done
  # A step left behind (the test failed mid-job) goes with its daemon's session.
  pkill -f "slurmstepd.*$slurm" 2>/dev/null
  sleep 0.5
  for f in "$slurm/slurmd.pid" "$slurm/slurmctld.pid" "$slurm/munge/pid"; do
    pid=$(cat "$f" 2>/dev/null) && kill -9 "$pid" 2>/dev/null
  done
  cleanup
}
trap stop_slurm EXIT

munged --socket="$slurm/munge/socket" --pid-file="$slurm/munge/pid" --key-file="$key" \
  --seed-file="$slurm/munge/seed" --log-file="$slurm/munge/log" -f ||
  fail "munged did not start: $(tail -3 "$slurm/munge/log")"
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start: $(tail -5 "$slurm/slurmctld.log")"
slurmd -f "$SLURM_CONF" -N localhost || fail "slurmd did not start: $(tail -5 "$slurm/slurmd.log")"
for _ in $(seq 100); do
  sinfo -h -o %T 2>/dev/null | grep -q idle && break
  sleep 0.2
done
sinfo -h -o %T 2>/dev/null | grep -q idle ||
  { fail "Slurm's node did not come up: $(sinfo 2>&1; tail -5 "$slurm/slurmd.log")"; report slurm; exit; }

cat >"$tmp/job.json" <<'JSON'
{"name": "slurmed", "seed": 3,
 "model": {"type": "mlp", "hidden": [64]},
 "data": {"type": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist"},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 40, "batch_size": 60},
 "parallelism": {"policy": "sync", "replicas": 2},
 "cluster": {"join_timeout_s": 60, "bucket_mb": 0.05}}
JSON
timeout 120 "$troupe" run "$tmp/job.json" --out "$tmp/ref" --quiet >/dev/null 2>&1 ||
  fail "the in-process reference run"

port=$(free_port)
cd "$tmp"
TROUPE="$troupe" TROUPE_PORT=$port timeout 300 sbatch --wait --ntasks=2 --cpus-per-task=1 \
  --time=5 --output="$tmp/slurm_job.log" "$here/../../examples/slurm/troupe.sbatch" \
  "$tmp/job.json" "$tmp/run" >"$tmp/sbatch.out" 2>&1
status=$?
check "sbatch examples/slurm/troupe.sbatch" $status 0 "$tmp/slurm_job.log" "placed 2 replica(s) on 2 node(s)"
for n in localhost-task0 localhost-task1; do
  grep -qF "node $n joined" "$tmp/slurm_job.log" && pass ||
    fail "no node $n joined: $(cat "$tmp/sbatch.out"; tail -20 "$tmp/slurm_job.log")"
done
if out=$(/usr/bin/python3 "$here/../python/compare_weights.py" "$tmp/ref" "$tmp/run" 1e-6 2>&1); then
  pass
else
  fail "the Slurm run's weights differ from the in-process run: $out"
fi

report slurm
