"""The same training in one process and over node processes, side by side.

  /usr/bin/python3 bench/nodes_training.py [--build build] [--job configs/fashion_mlp_sync.json]
      [--steps 1500] [--warmup 100] [--repeats 3] [--nodes 2] [--network]

Variants, alternated repeat by repeat so that machine noise hits all of them alike, each the
job file's training (its replicas, batch, optimizer) for STEPS steps, evaluating only after the
last one:
  one_process   troupe run JOB                          (replicas sum in shared memory)
  nodes         troupe run JOB --local-nodes N          (node processes on this host: they sum
                                                         through a shared-memory segment)
  nodes_network troupe run JOB --local-nodes N --set cluster.shared_memory=false
                                                        (only with --network: the socket
                                                         ring, plain TCP on loopback between
                                                         ring neighbours, as between hosts)
  nodes_network_continue   the same with cluster.on_node_loss=continue (only with --network:
                                                         the socket ring, which such a run forms
                                                         again at every regroup)
samples/s counts the steps after WARMUP, from the step records' times in metrics.jsonl (set-up,
data loading, the evaluation and exit are outside). Prints JSON: the median samples/s of each,
every repeat's figure, each run's final train loss (the same work must learn the same), and
nodes / one_process (target >= 0.9).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def write_job(job, steps, work):
    """The job file with STEPS steps (replacing epochs) and one evaluation, after the last."""
    with open(job) as f:
        spec = json.load(f)
    spec.setdefault("training", {}).pop("epochs", None)
    spec["training"]["steps"] = steps
    spec["training"]["eval_interval"] = steps
    path = os.path.join(work, "job.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def timed_rate(out, warmup):
    """samples/s over the step records after step index `warmup`."""
    steps = []
    with open(os.path.join(out, "metrics.jsonl")) as f:
        for line in f:
            record = json.loads(line)
            if record.get("event") == "step":
                steps.append(record)
    steps.sort(key=lambda r: r["step"])
    start = next(r for r in steps if r["step"] == warmup)
    later = [r for r in steps if r["step"] > warmup]
    if any("steps" in r for r in later):
        raise RuntimeError("metrics.jsonl was thinned: run fewer steps")
    samples = sum(r["samples"] for r in later)
    return samples / (later[-1]["t"] - start["t"])


def run(build, job, extra, warmup, work, full=False):
    """samples/s of `troupe run JOB EXTRA` and its final train loss (`full`: its summary)."""
    out = os.path.join(work, f"run-{time.monotonic_ns()}")
    cmd = [os.path.join(build, "apps", "troupe"), "run", job, "--quiet", "--out", out] + extra
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=900)
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    if summary["status"] != "succeeded":
        raise RuntimeError(f"{' '.join(cmd)}: {summary.get('error')}")
    return timed_rate(out, warmup), summary if full else summary["final_train_loss"]


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--job", default=os.path.join(HERE, "..", "configs", "fashion_mlp_sync.json"))
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--nodes", type=int, default=2)
    p.add_argument("--network", action="store_true",
                   help="also run the nodes with cluster.shared_memory=false")
    args = p.parse_args()
    if not 0 <= args.warmup < args.steps - 1:
        sys.exit("--warmup must be below --steps - 1")
    nodes = ["--local-nodes", str(args.nodes)]
    variants = {"one_process": [], "nodes": nodes}
    if args.network:
        variants["nodes_network"] = nodes + ["--set", "cluster.shared_memory=false"]
        variants["nodes_network_continue"] = variants["nodes_network"] + [
            "--set", "cluster.on_node_loss=continue"]
    rates = {name: [] for name in variants}
    losses = {name: [] for name in variants}
    with tempfile.TemporaryDirectory() as work:
        job = write_job(args.job, args.steps, work)
        for repeat in range(args.repeats):
            for name, extra in variants.items():
                rate, loss = run(args.build, job, extra, args.warmup, work)
                rates[name].append(rate)
                losses[name].append(loss)
                print(f"repeat {repeat + 1} {name}: {rate:.0f} samples/s, final train loss "
                      f"{loss:.4f}", file=sys.stderr)
    median = {name: statistics.median(r) for name, r in rates.items()}
    ratios = {f"{name}_over_one_process": median[name] / median["one_process"]
              for name in variants if name != "one_process"}
    print(json.dumps({
        "benchmark": "nodes_training",
        "job": os.path.basename(args.job), "steps": args.steps, "warmup": args.warmup,
        "nodes": args.nodes, "repeats": args.repeats,
        "median_samples_per_s": median,
        "samples_per_s_by_repeat": rates,
        "final_train_loss_by_repeat": losses,
        "ratios": ratios,
        "targets_met": {"nodes_over_one_process": ratios["nodes_over_one_process"] >= 0.9},
    }, indent=2))


if __name__ == "__main__":
    main()
