"""What mutual TLS costs between troupe processes, TLS on and off in the same run.

  /usr/bin/python3 bench/tls_cost.py [--build build] [--sizes-mb 1,16,64] [--iters 10]
                                     [--repeats 3] [--steps 400] [--job configs/fashion_mlp_sync.json]
                                     [--transport tcp|ring]

Two measurements, each alternating plain TCP and --tls `--repeats` times so that both see the
same machine (a busy neighbour slows both, not one):
  - bench/allreduce.cpp between 2 processes on loopback over TRANSPORT (tcp: the socket ring,
    the path sync gradients take between hosts, TLS 1.3 on its own connections under --tls;
    ring: the ring over CAF actors through guarded connections): the bus bandwidth per size,
    median of the repeats;
  - a 2-node training run, `troupe run JOB --local-nodes 2 --set cluster.shared_memory=false
    [--tls]` of STEPS steps (the job file's training with `steps` in place of `epochs`; without
    shared memory the gradients cross the socket ring as between hosts): the run's samples/s
    from its summary.json, and the wall time of the whole command (start-up, handshakes, data
    loading and exit included), medians of the repeats (target: TLS >= 0.9x plain samples/s).
Prints JSON with each figure and tls/plain ratios (1.0 = TLS costs nothing).
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


def allreduce(build, sizes, iters, tls, transport):
    cmd = [os.path.join(build, "bench", "allreduce_bench"), "--ranks", "2", "--sizes-mb", sizes,
           "--iters", str(iters), "--warmup", "2", "--transport", transport] + \
        (["--tls"] if tls else [])
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, timeout=600).stdout
    return {r["size_mb"]: r["busbw_gbs"] for r in json.loads(out.strip().splitlines()[-1])["results"]}


def with_steps(job, steps, work):
    """The job file with its training length set to `steps` (replacing epochs, if it has them)."""
    with open(job) as f:
        spec = json.load(f)
    spec.setdefault("training", {}).pop("epochs", None)
    spec["training"]["steps"] = steps
    path = os.path.join(work, "job.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def training(build, job, tls, work):
    out = os.path.join(work, f"run-{time.monotonic_ns()}")
    cmd = [os.path.join(build, "apps", "troupe"), "run", job, "--local-nodes", "2", "--quiet",
           "--set", "cluster.shared_memory=false", "--out", out] + (["--tls"] if tls else [])
    start = time.monotonic()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, timeout=900)
    wall = time.monotonic() - start
    with open(os.path.join(out, "summary.json")) as f:
        summary = json.load(f)
    return summary["samples_per_s"], wall


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--sizes-mb", default="1,16,64")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--job", default=os.path.join(HERE, "..", "configs", "fashion_mlp_sync.json"))
    p.add_argument("--transport", default="tcp", choices=["tcp", "ring"])
    args = p.parse_args()
    busbw = {False: [], True: []}
    rate = {False: [], True: []}
    wall = {False: [], True: []}
    with tempfile.TemporaryDirectory() as work:
        job = with_steps(args.job, args.steps, work)
        for _ in range(args.repeats):
            for tls in (False, True):
                busbw[tls].append(allreduce(args.build, args.sizes_mb, args.iters, tls,
                                            args.transport))
                r, w = training(args.build, job, tls, work)
                rate[tls].append(r)
                wall[tls].append(w)
                print(f"tls={tls}: training {r:.0f} samples/s, {w:.2f} s", file=sys.stderr)
    rows = []
    for size in busbw[False][0]:
        plain = statistics.median(b[size] for b in busbw[False])
        tls = statistics.median(b[size] for b in busbw[True])
        rows.append({"size_mb": size, "plain_busbw_gbs": round(plain, 3),
                     "tls_busbw_gbs": round(tls, 3), "tls_over_plain": round(tls / plain, 3)})
    train = {"job": os.path.basename(args.job), "steps": args.steps, "repeats": args.repeats,
             "target_samples_per_s_tls_over_plain": 0.9}
    for key, values in (("samples_per_s", rate), ("wall_s", wall)):
        plain, tls = statistics.median(values[False]), statistics.median(values[True])
        train[f"plain_{key}"] = round(plain, 2)
        train[f"tls_{key}"] = round(tls, 2)
        train[f"{key}_tls_over_plain"] = round(tls / plain, 3)
    train["met"] = train["samples_per_s_tls_over_plain"] >= 0.9
    print(json.dumps({"transport": args.transport, "allreduce_2_ranks": rows,
                      "training_2_nodes": train}, indent=1))


if __name__ == "__main__":
    main()
