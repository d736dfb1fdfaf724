"""async with a sharded parameter server against one server and against sync, over emulated
hosts on a slow link, side by side.

  /usr/bin/python3 bench/sharded_server.py [--build build] [--hosts 4] [--nodes-per-host 1]
      [--rate 200mbit] [--steps 300] [--warmup 30] [--repeats 2] [--shards 1,2,4]
      [--job configs/fashion_mlp_sync.json] [--straggler RANK:MS] [--compression int8]

Runs the job (parallelism.replicas = HOSTS x NODES_PER_HOST, one per node) over
scripts/emulate_hosts.sh (HOSTS network namespaces, each link shaped to RATE both ways) as
  sync        the ring all-reduce (summed by host where a host has several nodes)
  async_S     parallelism.policy "async", parallelism.ps_shards S, no compression: S = 1 is the
              one server in the coordinator (host 0), a star; S > 1 puts a shard on each of S
              nodes, every worker pushing and pulling each shard's slice directly
alternated repeat by repeat so that machine noise hits all alike. samples/s counts the global
steps after WARMUP (an async step is `replicas` pushes: the samples of a sync step). Prints
JSON: the median samples/s of each variant, every repeat, the test accuracy each reached, the
bytes on the wire per step (plan's figure), and async_S / sync and async_S / async_1 (target:
async with 2 and 4 shards >= 1.5x sync). --straggler makes worker RANK sleep MS milliseconds in
every step in every variant (faults.slow_worker, faults.slow_ms): where workers differ in speed,
which is what async is for. --compression packs async's pushes and hand-outs (bf16 or int8; sync
stays float32). Where the machine cannot emulate hosts, prints why and exits 0.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from emulated_hosts import Skipped, emulate_run  # noqa: E402
from nodes_training import timed_rate, write_job  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--nodes-per-host", type=int, default=1)
    p.add_argument("--rate", default="200mbit")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--shards", default="1,2,4")
    p.add_argument("--job", default=os.path.join(HERE, "..", "configs", "fashion_mlp_sync.json"))
    p.add_argument("--straggler", help="RANK:MS, a worker that sleeps MS ms every step")
    p.add_argument("--compression", choices=["none", "bf16", "int8"], default="none")
    args = p.parse_args()
    if not 0 <= args.warmup < args.steps - 1:
        sys.exit("--warmup must be below --steps - 1")
    ranks = args.hosts * args.nodes_per_host
    shards = [int(s) for s in args.shards.split(",")]
    if any(s < 1 or s > ranks for s in shards):
        sys.exit(f"--shards: each between 1 and the {ranks} nodes")
    slow = []
    if args.straggler:
        try:
            rank, ms = (int(x) for x in args.straggler.split(":"))
        except ValueError:
            sys.exit(f"--straggler: expected RANK:MS, got {args.straggler!r}")
        if not 0 <= rank < ranks or ms < 0:
            sys.exit(f"--straggler: a rank below {ranks} and a non-negative MS")
        slow = ["--set", f"faults.slow_worker={rank}", "--set", f"faults.slow_ms={ms}"]
    variants = {"sync": []}
    for s in shards:
        variants[f"async_{s}"] = ["--set", "parallelism.policy=async",
                                  "--set", f"parallelism.ps_shards={s}",
                                  "--set", f"parallelism.compression={args.compression}"]
    result = {"benchmark": "sharded_server", "hosts": args.hosts,
              "nodes_per_host": args.nodes_per_host, "rate": args.rate, "steps": args.steps,
              "warmup": args.warmup, "repeats": args.repeats, "job": os.path.basename(args.job),
              "straggler": args.straggler, "compression": args.compression}
    rates = {v: [] for v in variants}
    accuracy = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as work:
        job = write_job(args.job, args.steps, work)
        extra = ["--set", f"parallelism.replicas={ranks}"] + slow
        for repeat in range(args.repeats):
            for name, sets in variants.items():
                out = os.path.join(work, f"{name}-{repeat}")
                emulate_run(args.hosts, args.nodes_per_host, args.rate, args.build, job, out,
                            extra + sets, name)
                rates[name].append(timed_rate(out, args.warmup))
                with open(os.path.join(out, "summary.json")) as f:
                    accuracy[name].append(json.load(f).get("test_accuracy"))
    medians = {v: statistics.median(r) for v, r in rates.items()}
    result["samples_per_s"] = medians
    result["repeats_samples_per_s"] = rates
    result["test_accuracy"] = accuracy
    result["over_sync"] = {v: medians[v] / medians["sync"] for v in variants if v != "sync"}
    if "async_1" in medians:
        result["over_one_server"] = {v: medians[v] / medians["async_1"]
                                     for v in variants if v.startswith("async_") and v != "async_1"}
    sharded = [v for v in variants if v.startswith("async_") and v != "async_1"]
    result["target_sharded_over_sync"] = {
        "target": 1.5, "met": {v: result["over_sync"][v] >= 1.5 for v in sharded}}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    try:
        main()
    except Skipped as why:
        print(json.dumps({"benchmark": "sharded_server", "skipped": str(why)}, indent=2))
