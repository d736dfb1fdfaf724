"""troupe's socket ring against gloo's halving-doubling (cluster.collective), over emulated hosts.

  /usr/bin/python3 bench/collective_hosts.py [--build build] [--hosts 4] [--ranks 4,8,16]
      [--sizes-mb 1,16,128] [--rate 1gbit] [--steps 12] [--warmup 3] [--repeats 1]

Per number of ranks R (R / H nodes on each of H = min(HOSTS, R) emulated hosts,
scripts/emulate_hosts.sh,
every host link shaped to RATE both ways by tbf) and per gradient size S, trains a sync MLP whose
gradient is S MB (one hidden layer sized to it, synthetic 28x28 data, 4 rows per replica a step,
so that the step is the sum) with cluster.shared_memory=false, every rank summing over the
network, as cluster.collective "ring" and "gloo", alternated repeat by repeat. Ranks are placed
on hosts in order (ranks 0..R/HOSTS-1 on host 0, ...), as troupe places nodes sorted by name.
Prints JSON: per R and S the median step time after WARMUP steps (the step records' step_s) and
the median time the workers spent in the sum (worker_step comm_s: it includes waiting for the
slowest rank), for each collective, and ring / gloo of the step time (above 1: gloo is faster).
Where the machine cannot emulate hosts, prints why and exits 0.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from emulated_hosts import SKIPPED, emulate  # noqa: E402

FEATURES = 28 * 28
CLASSES = 10


def hidden_for(mb):
    """The hidden width whose MLP's parameters take `mb` MB (1e6 bytes) of float32."""
    return max(1, round((mb * 1e6 / 4 - CLASSES) / (FEATURES + 1 + CLASSES)))


def write_job(path, ranks, mb, steps):
    job = {"name": f"sum-{ranks}-{mb}mb", "seed": 1,
           "model": {"type": "mlp", "hidden": [hidden_for(mb)]},
           "data": {"type": "synthetic", "train_samples": 1024, "test_samples": 64},
           "optimizer": {"type": "sgd", "lr": 0.001},
           "training": {"steps": steps, "batch_size": 4 * ranks, "eval_interval": steps},
           "parallelism": {"policy": "sync", "replicas": ranks},
           "cluster": {"shared_memory": False, "node_timeout_s": 30, "join_timeout_s": 300}}
    with open(path, "w") as f:
        json.dump(job, f)


def step_times(out, warmup):
    """Median step_s and median worker comm_s over the steps after `warmup`."""
    steps, comm = [], []
    with open(os.path.join(out, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("step", -1) < warmup:
                continue
            if r.get("event") == "step":
                steps.append(r["step_s"])
            elif r.get("event") == "worker_step":
                comm.append(r["comm_s"])
    return statistics.median(steps), statistics.median(comm)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--ranks", default="2,4,8,16")
    p.add_argument("--sizes-mb", default="1,16,128")
    p.add_argument("--rate", default="1gbit")
    p.add_argument("--steps", type=int, default=12)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--repeats", type=int, default=1)
    args = p.parse_args()
    ranks_list = [int(r) for r in args.ranks.split(",")]
    sizes = [float(s) for s in args.sizes_mb.split(",")]
    if any(r < 2 or r % min(args.hosts, r) for r in ranks_list):
        sys.exit(f"--ranks: each must be at least 2 and a multiple of --hosts {args.hosts} "
                 "where larger")
    if not 0 <= args.warmup < args.steps - 1:
        sys.exit("--warmup must be below --steps - 1")
    result = {"benchmark": "collective_hosts", "hosts": args.hosts, "rate": args.rate,
              "steps": args.steps, "warmup": args.warmup, "repeats": args.repeats, "runs": []}
    with tempfile.TemporaryDirectory() as work:
        for ranks in ranks_list:
            for mb in sizes:
                job = os.path.join(work, f"job-{ranks}-{mb}.json")
                write_job(job, ranks, mb, args.steps)
                times = {"ring": [], "gloo": []}
                comms = {"ring": [], "gloo": []}
                for repeat in range(args.repeats):
                    for collective in times:
                        out = os.path.join(work, f"{collective}-{ranks}-{mb}-{repeat}")
                        hosts = min(args.hosts, ranks)
                        run_args = argparse.Namespace(hosts=hosts, nodes_per_host=ranks // hosts,
                                                      rate=args.rate, build=args.build)
                        status, text = emulate(run_args, job, out, None,
                                               ["--set", f"cluster.collective={collective}"])
                        if status == SKIPPED:
                            print(json.dumps({"benchmark": "collective_hosts",
                                              "skipped": text.strip().splitlines()[-1]},
                                             indent=2))
                            return
                        if status != 0:
                            raise RuntimeError(f"{collective} {ranks} ranks {mb} MB: exit "
                                               f"{status}\n{text[-2000:]}")
                        step_s, comm_s = step_times(out, args.warmup)
                        times[collective].append(step_s)
                        comms[collective].append(comm_s)
                row = {"ranks": ranks, "hosts": min(args.hosts, ranks), "size_mb": mb,
                       "hidden": hidden_for(mb)}
                for c in times:
                    row[f"{c}_step_s"] = statistics.median(times[c])
                    row[f"{c}_comm_s"] = statistics.median(comms[c])
                row["ring_over_gloo"] = row["ring_step_s"] / row["gloo_step_s"]
                result["runs"].append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
