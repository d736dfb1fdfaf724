"""Runs troupe's all-reduce between processes and PyTorch's gloo all_reduce side by side and
reports ratios.

  /usr/bin/python3 bench/allreduce.py [--build build] [--ranks 2,3,4] [--sizes-mb 1,16,128]
                                      [--iters 10] [--warmup 2] [--bucket-mb 1] [--window 1]
                                      [--tls] [--repeats 1]

For each number of processes it runs, one after the other on this host, bench/allreduce.cpp
three times and bench/allreduce_gloo.py (the reference):
  troupe_shm   the shared-memory segment that node processes on one host sum through
               (core/collective/host_reduction.hpp; what `troupe run --local-nodes` uses)
  troupe_tcp   the socket ring (core/collective/socket_ring.hpp): plain TCP between ring
               neighbours, the data plane for nodes on different hosts
  troupe_ring  the ring of actors/exchange/ring_exchange.hpp over CAF on loopback TCP (what nodes on
               different hosts use today; --tls: over mutual TLS, which gloo never uses)
  gloo         torch.distributed with the gloo backend on loopback TCP
--repeats R alternates the three R times and keeps each figure's median. Prints JSON: per
(ranks, size) the bus bandwidth of each, 2(N - 1)/N x bytes / time in GB/s, and their ratios to
gloo's; troupe_over_gloo is troupe's on this host (shm; target >= 1.0 at 16 and 128 MB, and
above 1 at 1 MB), tcp_over_gloo the socket ring's (the same target between hosts),
ring_over_gloo CAF's.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, timeout=600).stdout
    return {r["size_mb"]: r for r in json.loads(out.strip().splitlines()[-1])["results"]}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--ranks", default="2,3,4")
    p.add_argument("--sizes-mb", default="1,16,128")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--bucket-mb", type=float, default=1)
    p.add_argument("--window", type=int, default=1)  # cluster.ring_window's default
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--tls", action="store_true", help="troupe's ring uses mutual TLS")
    args = p.parse_args()
    common = ["--sizes-mb", args.sizes_mb, "--iters", str(args.iters), "--warmup",
              str(args.warmup)]
    exe = os.path.join(args.build, "bench", "allreduce_bench")
    rows = []
    for ranks in [int(x) for x in args.ranks.split(",")]:
        commands = {
            "troupe_shm": [exe, "--ranks", str(ranks), "--transport", "shm"] + common,
            "troupe_tcp": [exe, "--ranks", str(ranks), "--transport", "tcp", "--bucket-mb",
                           str(args.bucket_mb), "--window", str(args.window)] + common,
            "troupe_ring": [exe, "--ranks", str(ranks), "--transport", "ring", "--bucket-mb",
                            str(args.bucket_mb), "--window", str(args.window)] + common
            + (["--tls"] if args.tls else []),
            "gloo": [sys.executable, os.path.join(HERE, "allreduce_gloo.py"), "--ranks",
                     str(ranks)] + common,
        }
        results = {name: [] for name in commands}
        for _ in range(args.repeats):
            for name, cmd in commands.items():
                results[name].append(run(cmd))
        for size in results["gloo"][0]:
            busbw = {name: statistics.median(r[size]["busbw_gbs"] for r in runs)
                     for name, runs in results.items()}
            median_ms = {name: statistics.median(r[size]["median_s"] for r in runs) * 1e3
                         for name, runs in results.items()}
            row = {"ranks": ranks, "size_mb": size}
            for name in commands:
                row[f"{name}_busbw_gbs"] = round(busbw[name], 3)
            for name in commands:
                row[f"{name}_median_ms"] = round(median_ms[name], 2)
            row["troupe_over_gloo"] = round(busbw["troupe_shm"] / busbw["gloo"], 3)
            row["tcp_over_gloo"] = round(busbw["troupe_tcp"] / busbw["gloo"], 3)
            row["ring_over_gloo"] = round(busbw["troupe_ring"] / busbw["gloo"], 3)
            rows.append(row)
            print(f"{ranks} procs {size:g} MB: shm {row['troupe_shm_busbw_gbs']} GB/s, tcp "
                  f"{row['troupe_tcp_busbw_gbs']} GB/s, ring {row['troupe_ring_busbw_gbs']} "
                  f"GB/s, gloo {row['gloo_busbw_gbs']} GB/s; troupe/gloo "
                  f"{row['troupe_over_gloo']}, tcp/gloo {row['tcp_over_gloo']}", file=sys.stderr)
    def met_by(key):
        return all(r[key] >= 1.0 for r in rows if r["size_mb"] >= 16) and all(
            r[key] > 1.0 for r in rows if r["size_mb"] <= 1)
    met = met_by("troupe_over_gloo")
    tcp_met = met_by("tcp_over_gloo")
    print(json.dumps({"bucket_mb": args.bucket_mb, "window": args.window, "tls": args.tls,
                      "repeats": args.repeats, "results": rows, "target_met": met, "tcp_target_met": tcp_met},
                     indent=1))


if __name__ == "__main__":
    main()
