"""Start-up at scale: many nodes of a tiny job on this machine, and what idle nodes cost.

  /usr/bin/python3 bench/startup_scale.py [--build build] [--nodes 64] [--idle-s 10]

Two measurements, each with a coordinator and NODES `troupe node` processes (one compute thread
each) started at once on 127.0.0.1:
  start_up   configs/synthetic_smoke.json with one replica per node, a batch of 2 rows per replica,
             30 steps: seconds from
             starting the processes to "placed ... training" in the coordinator's log (every
             node joined, the gradients' paths settled) and to the first step record
             (targets: <= 10 s to stepping), launched two ways one after the other: `separate`,
             NODES `troupe node` commands (as NODES hosts would, here sharing 2 cores), and
             `forked`, one `troupe node --processes NODES` (the nodes forked after one start-up);
  idle       the same job waiting for one node more than come (cluster.nodes = NODES + 1): once
             NODES have joined, the coordinator's CPU time over IDLE_S seconds, from
             /proc/PID/stat, as a share of one core (target: <= 2 %), and the nodes' together.
Prints JSON. Every process is killed at the end, pass or fail.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
JOB = os.path.join(HERE, "..", "configs", "synthetic_smoke.json")


def cpu_seconds(pid):
    """User + system CPU seconds of process `pid` so far."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def wait_for(predicate, limit_s, what):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(0.02)
    raise RuntimeError(f"no {what} within {limit_s} s")


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


class cluster:
    """A coordinator and `nodes` nodes, started together; killed on exit."""

    def __init__(self, troupe, work, nodes, expected, steps, forked=False):
        self.procs = []
        self.work = work
        self.log = os.path.join(work, "coordinator.log")
        self.out = os.path.join(work, "run")
        with open(os.path.join(work, "token"), "w") as f:
            f.write(os.urandom(16).hex() + "\n")
        token = ["--token-file", os.path.join(work, "token")]
        sets = ["--set", f"cluster.nodes={expected}", "--set", f"parallelism.replicas={expected}",
                "--set", f"training.steps={steps}", "--set", "training.eval_interval=0",
                "--set", f"training.batch_size={2 * expected}",
                "--set", "cluster.join_timeout_s=120"]
        self.start = time.monotonic()
        self.coordinator = self.spawn([troupe, "coordinator", JOB, "--listen", "127.0.0.1:0",
                                       "--out", self.out, "--quiet"] + token + sets, self.log)
        try:
            wait_for(lambda: "listening on" in read(self.log) or self.coordinator.poll() is not None,
                     60, "listening line")
        finally:
            if "listening on" not in read(self.log):
                self.coordinator.kill()
        if "listening on" not in read(self.log):
            raise RuntimeError("the coordinator did not listen: " + read(self.log)[-2000:])
        port = re.search(r"listening on [^ ]*:(\d+)", read(self.log)).group(1)
        join = [troupe, "node", "--join", f"127.0.0.1:{port}", "--threads", "1"] + token
        if forked:
            self.nodes = [self.spawn(join + ["--name", "n", "--processes", str(nodes)],
                                     os.path.join(work, "nodes.log"))]
        else:
            self.nodes = [self.spawn(join + ["--name", f"n{i}"], os.path.join(work, f"n{i}.log"))
                          for i in range(nodes)]

    def spawn(self, cmd, log):
        with open(log, "w") as f:
            p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT)
        self.procs.append(p)
        return p

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def first_step_written(out):
    return '"event":"step"' in read(os.path.join(out, "metrics.jsonl"))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--nodes", type=int, default=64)
    p.add_argument("--idle-s", type=float, default=10)
    args = p.parse_args()
    troupe = os.path.join(args.build, "apps", "troupe")
    result = {"benchmark": "startup_scale", "nodes": args.nodes, "cores": os.cpu_count()}
    with tempfile.TemporaryDirectory() as work:
        result["start_up"] = {}
        for launch in ("separate", "forked"):
            os.makedirs(os.path.join(work, launch))
            with cluster(troupe, os.path.join(work, launch), args.nodes, args.nodes, 30,
                         forked=launch == "forked") as c:
                placed = wait_for(lambda: "; training" in read(c.log), 120, "placement")
                stepping = wait_for(lambda: first_step_written(c.out), 120, "first step")
                if c.coordinator.wait(timeout=300) != 0:
                    raise RuntimeError("the start-up run failed: " + read(c.log)[-2000:])
                result["start_up"][launch] = {"joined_and_placed_s": placed - c.start,
                                              "stepping_s": stepping - c.start,
                                              "target_stepping_s": 10,
                                              "met": stepping - c.start <= 10}
        result["start_up"]["forked_over_separate_stepping_s"] = (
            result["start_up"]["forked"]["stepping_s"] /
            result["start_up"]["separate"]["stepping_s"])
        os.makedirs(os.path.join(work, "idle"))
        expected = args.nodes + 1
        with cluster(troupe, os.path.join(work, "idle"), args.nodes, expected, 30) as c:
            wait_for(lambda: f"{args.nodes} of {expected})" in read(c.log), 120, "every join")
            time.sleep(1)  # the last join's work done
            coordinator0 = cpu_seconds(c.coordinator.pid)
            nodes0 = sum(cpu_seconds(n.pid) for n in c.nodes)
            t0 = time.monotonic()
            time.sleep(args.idle_s)
            elapsed = time.monotonic() - t0
            share = (cpu_seconds(c.coordinator.pid) - coordinator0) / elapsed
            nodes_share = (sum(cpu_seconds(n.pid) for n in c.nodes) - nodes0) / elapsed
            result["idle"] = {"seconds": elapsed, "coordinator_core_share": share,
                              "nodes_core_share_together": nodes_share,
                              "target_coordinator_core_share": 0.02, "met": share <= 0.02}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    sys.exit(main())
