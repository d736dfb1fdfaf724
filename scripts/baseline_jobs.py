#!/usr/bin/python3
"""The 18-job behaviour baseline for refactors that must not change what troupe computes.

    baseline_jobs.py run TROUPE OUT        runs the 18 jobs with the binary TROUPE into OUT/NAME
    baseline_jobs.py compare BEFORE AFTER  compares two such folders; exit 1 naming each difference

The jobs cover every mode: sync with 1, 2 and 3 replicas, adam, local_sgd (with and without
averaged momenta), async (files and record kinds only: not deterministic), a schedule of phases, GPipe and 1F1B pipelines
with 2 replicas, micro-batch accumulation, a stacked ensemble, a CNN, a CNN pipeline, the Fashion
MLP, and 2 and 3 nodes (sync, local_sgd) through `--local-nodes`. Compared: the files each run
left, every weights file tensor by tensor (torch.equal), the metrics records as multisets with
their timings removed (the step records in order), and summary.json without its timings.
"""
import json
import os
import subprocess
import sys

SMALL = {"name": "base", "seed": 5,
         "model": {"type": "mlp", "hidden": [32], "activation": "tanh"},
         "data": {"type": "synthetic", "train_samples": 1024, "test_samples": 256},
         "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
         "training": {"steps": 40, "batch_size": 32, "eval_interval": 20},
         "parallelism": {"policy": "sync", "replicas": 1, "threads_per_replica": 1}}
FASHION = {"type": "fashion_mnist", "path": "/usr/share/datasets/fashion-mnist"}
CNN = {"type": "cnn", "channels": [4, 8], "kernel_size": 5, "hidden": [32], "activation": "relu"}


def job(**changes):
    j = json.loads(json.dumps(SMALL))
    for path, value in changes.items():
        node = j
        keys = path.split("__")
        for k in keys[:-1]:
            node = node.setdefault(k, {})
        node[keys[-1]] = value
    return j


JOBS = {
    "sync1": (job(), []),
    "sync2": (job(parallelism__replicas=2), []),
    "sync3": (job(parallelism__replicas=3), []),
    "adam2": (job(parallelism__replicas=2, optimizer={"type": "adam", "lr": 0.01}), []),
    "local_sgd": (job(parallelism={"policy": "local_sgd", "period": 4, "replicas": 2,
                                   "threads_per_replica": 1}), []),
    "local_sgd_momenta": (job(parallelism={"policy": "local_sgd", "period": 4, "replicas": 2,
                                           "average_momenta": True, "threads_per_replica": 1}),
                          []),
    "async": (job(parallelism={"policy": "async", "replicas": 2, "max_staleness": 0,
                               "threads_per_replica": 1}), []),
    "schedule": (job(parallelism={"policy": "schedule", "replicas": 2, "threads_per_replica": 1,
                                  "phases": [{"policy": "sync", "steps": 20},
                                             {"policy": "local_sgd", "period": 4}]}), []),
    "gpipe": (job(model={"type": "mlp", "hidden": [32, 16]},
                  parallelism={"policy": "sync", "replicas": 2, "stages": 2, "micro_batches": 4,
                               "schedule": "gpipe", "threads_per_replica": 1}), []),
    "one_f_one_b": (job(model={"type": "mlp", "hidden": [32, 16]},
                        parallelism={"policy": "sync", "replicas": 1, "stages": 3,
                                     "micro_batches": 4, "schedule": "1f1b",
                                     "threads_per_replica": 1}), []),
    "micro_batches": (job(parallelism={"policy": "sync", "replicas": 1, "stages": 1,
                                       "micro_batches": 4, "threads_per_replica": 1}), []),
    "ensemble": (job(ensemble={"members": 4}), []),
    "cnn": (job(model=CNN, data=FASHION, training={"steps": 20, "batch_size": 32,
                                                    "eval_interval": 0},
                parallelism__replicas=2), []),
    "cnn_pipeline": (job(model=CNN, data=FASHION,
                         training={"steps": 20, "batch_size": 32, "eval_interval": 0},
                         parallelism={"policy": "sync", "replicas": 1, "stages": 2,
                                      "micro_batches": 2, "threads_per_replica": 1}), []),
    "fashion_mlp": (job(model={"type": "mlp", "hidden": [64]}, data=FASHION,
                        training={"steps": 60, "batch_size": 64, "eval_interval": 30},
                        parallelism__replicas=2), []),
    "nodes2": (job(parallelism__replicas=2), ["--local-nodes", "2"]),
    "nodes3": (job(parallelism__replicas=3), ["--local-nodes", "3"]),
    "nodes_local_sgd": (job(parallelism={"policy": "local_sgd", "period": 4, "replicas": 2,
                                         "threads_per_replica": 1}), ["--local-nodes", "2"]),
}

TIMINGS = {"t", "wall_s", "train_s", "step_s", "compute_s", "comm_s", "apply_s", "eval_s",
           "samples_per_s", "seconds", "wait_s", "wait_fraction", "idle_s", "busy_s", "reduce_s",
           "unix_s", "detection_s", "recovery_s", "elapsed_s", "rss_bytes", "memory_bytes",
           "throughput", "path", "bytes", "bubble_fraction"}
# Async applies each gradient as it arrives: even with bound 0 the order within a clock follows
# the threads' timing, so its weights and losses vary run to run. Compared: its files and how
# many records of each kind it wrote.
NONDETERMINISTIC = {"async"}


def run(troupe, out):
    os.makedirs(out, exist_ok=True)
    for name, (spec, extra) in JOBS.items():
        spec = dict(spec, name=name)
        path = os.path.join(out, name + ".json")
        with open(path, "w") as f:
            json.dump(spec, f)
        folder = os.path.join(out, name)
        done = subprocess.run([troupe, "run", path, "--out", folder, "--force", "--quiet"] + extra,
                              capture_output=True, text=True, timeout=600)
        print(f"{name}: exit {done.returncode}", flush=True)
        if done.returncode != 0:
            print(done.stdout[-2000:], done.stderr[-2000:])


def stripped(record):
    if isinstance(record, dict):
        return {k: stripped(v) for k, v in record.items() if k not in TIMINGS}
    if isinstance(record, list):
        return [stripped(v) for v in record]
    return record


def records(folder):
    lines = [json.loads(l) for l in open(os.path.join(folder, "metrics.jsonl"))]
    steps = [stripped(r) for r in lines if r.get("event") == "step"]
    rest = sorted(json.dumps(stripped(r), sort_keys=True) for r in lines if r.get("event") != "step")
    return steps, rest


def compare(before, after):
    import torch
    problems = []
    for name in JOBS:
        a, b = os.path.join(before, name), os.path.join(after, name)
        files_a = sorted(f for f in os.listdir(a) if not f.startswith("."))
        files_b = sorted(f for f in os.listdir(b) if not f.startswith("."))
        if files_a != files_b:
            problems.append(f"{name}: files {files_a} against {files_b}")
        if name in NONDETERMINISTIC:
            kinds = [sorted(json.loads(r).get("event", "") for r in records(d)[1]) for d in (a, b)]
            if kinds[0] != kinds[1] or len(records(a)[0]) != len(records(b)[0]):
                problems.append(f"{name}: other records")
            print(f"{name}: {'same files and records' if kinds[0] == kinds[1] else 'DIFFERENT'}")
            continue
        for f in files_a:
            if f.endswith(".pt") and f in files_b and f != "final_model.pt":
                wa, wb = torch.load(os.path.join(a, f)), torch.load(os.path.join(b, f))
                if wa.keys() != wb.keys() or any(not torch.equal(wa[k], wb[k]) for k in wa):
                    problems.append(f"{name}: {f} differs")
        if records(a) != records(b):
            problems.append(f"{name}: metrics records differ")
        sa = stripped(json.load(open(os.path.join(a, "summary.json"))))
        sb = stripped(json.load(open(os.path.join(b, "summary.json"))))
        if sa != sb:
            problems.append(f"{name}: summary.json differs")
        print(f"{name}: {'same' if not any(p.startswith(name + ':') for p in problems) else 'DIFFERENT'}")
    for p in problems:
        print("DIFFERENCE:", p)
    return 1 if problems else 0


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("run", "compare"):
        sys.exit(__doc__)
    if sys.argv[1] == "run":
        run(sys.argv[2], sys.argv[3])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
