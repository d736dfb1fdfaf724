"""sync, local_sgd and async over a slow link, side by side.

  /usr/bin/python3 bench/slow_link.py [--build build] [--job configs/fashion_mlp_sync.json]
      [--steps 200] [--warmup 20] [--repeats 1] [--nodes 2] [--rate 200mbit] [--set KEY=VALUE]
      [--compression int8] [--outer '{"lr": 0.7, "momentum": 0.9}']

Runs the job over NODES node processes on this host, in a network namespace of its own
(unshare -n) whose loopback is shaped to an Ethernet-like link: MTU 1500 and a token bucket
(tc tbf, RATE, burst 64kb, latency 100ms). Every byte between the processes, in either direction,
passes loopback's one shaped queue, so the RATE is shared by all traffic. cluster.shared_memory
is off, so the gradients and weights cross the link as between hosts. Variants, alternated repeat
by repeat so that machine noise hits all of them alike, the job's training for STEPS steps:
  sync                  parallelism.policy=sync
  local_sgd             parallelism.policy=local_sgd (period 8 unless --set says otherwise)
  async                 parallelism.policy=async
  local_sgd_COMPRESSION and async_COMPRESSION: the same with parallelism.compression=COMPRESSION
                        (--compression, int8 unless told; none leaves them out)
  local_sgd_diloco      local_sgd with DiLoCo's outer optimizer (--outer, the
                        parallelism.outer_optimizer object; none leaves it out)
samples/s counts the steps after WARMUP from metrics.jsonl (see nodes_training.py). Prints JSON:
the median samples/s of each, the ratios to sync (targets: async >= 1.5, local_sgd >= 4, met by
either form of each), and each run's final train loss, test loss and test accuracy (the accuracy
floor: the compressed runs must learn what the others do). Where the machine allows no network
namespace or no tbf queue, prints why and exits 0 (skipped).
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nodes_training import run, write_job  # noqa: E402

INSIDE = "TROUPE_SLOW_LINK_INSIDE"


def skip(why):
    print(json.dumps({"benchmark": "slow_link", "skipped": why}, indent=2))
    sys.exit(0)


def shape_loopback(rate):
    """In the namespace: loopback up at MTU 1500, behind a token bucket of RATE."""
    for cmd in (["ip", "link", "set", "lo", "mtu", "1500", "up"],
                ["tc", "qdisc", "add", "dev", "lo", "root", "tbf", "rate", rate, "burst", "64kb",
                 "latency", "100ms"]):
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            skip(f"'{' '.join(cmd)}' failed: {done.stderr.strip()}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--job", default=os.path.join(HERE, "..", "configs", "fashion_mlp_sync.json"))
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--warmup", type=int, default=20)
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--rate", default="200mbit")
    p.add_argument("--set", action="append", default=[], help="KEY=VALUE for every variant")
    p.add_argument("--compression", default="int8", choices=["none", "bf16", "int8"])
    p.add_argument("--outer", default='{"lr": 0.7, "momentum": 0.9}',
                   help="parallelism.outer_optimizer of the local_sgd_diloco variant (none: no such variant)")
    args = p.parse_args()
    if not 0 <= args.warmup < args.steps - 1:
        sys.exit("--warmup must be below --steps - 1")
    if os.environ.get(INSIDE) != "1":
        if shutil.which("unshare") is None or shutil.which("tc") is None:
            skip("needs unshare and tc (util-linux, iproute2)")
        probe = subprocess.run(["unshare", "-n", "true"], capture_output=True, text=True)
        if probe.returncode != 0:
            skip(f"no network namespace here (unshare -n: {probe.stderr.strip()})")
        env = dict(os.environ, **{INSIDE: "1"})
        sys.exit(subprocess.run(["unshare", "-n", sys.executable] + sys.argv, env=env).returncode)
    shape_loopback(args.rate)

    def sets(options):
        return [arg for option in options for arg in ("--set", option)]

    common = ["--local-nodes", str(args.nodes), "--set", "cluster.shared_memory=false",
              "--set", f"training.eval_interval={args.steps}"] + sets(args.set)
    variants = {policy: common + ["--set", f"parallelism.policy={policy}"]
                for policy in ("sync", "local_sgd", "async")}
    if args.outer != "none":  # DiLoCo: the same local_sgd, its average stepped by the outer SGD
        variants["local_sgd_diloco"] = variants["local_sgd"] + [
            "--set", f"parallelism.outer_optimizer={args.outer}"]
    if args.compression != "none":
        for policy in ("local_sgd", "async"):
            variants[f"{policy}_{args.compression}"] = variants[policy] + [
                "--set", f"parallelism.compression={args.compression}"]
    rates = {name: [] for name in variants}
    results = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as work:
        job = write_job(args.job, args.steps, work)
        for repeat in range(args.repeats):
            for name, extra in variants.items():
                rate, summary = run(args.build, job, extra, args.warmup, work, full=True)
                rates[name].append(rate)
                results[name].append({key: summary.get(key) for key in (
                    "final_train_loss", "test_loss", "test_accuracy")})
                print(f"repeat {repeat + 1} {name}: {rate:.0f} samples/s, {results[name][-1]}",
                      file=sys.stderr)
    median = {name: statistics.median(r) for name, r in rates.items()}
    ratios = {f"{name}_over_sync": median[name] / median["sync"] for name in variants
              if name != "sync"}

    def best(policy):
        return max(r for name, r in ratios.items() if name.startswith(policy))
    print(json.dumps({
        "benchmark": "slow_link",
        "link": f"loopback, mtu 1500, tbf rate {args.rate} burst 64kb latency 100ms",
        "job": os.path.basename(args.job), "steps": args.steps, "warmup": args.warmup,
        "nodes": args.nodes, "repeats": args.repeats,
        "options": args.set, "compression": args.compression,
        "median_samples_per_s": median,
        "samples_per_s_by_repeat": rates,
        "results_by_repeat": results,
        "ratios": ratios,
        "targets_met": {"async_over_sync": best("async") >= 1.5,
                        "local_sgd_over_sync": best("local_sgd") >= 4.0},
    }, indent=2))


if __name__ == "__main__":
    main()
