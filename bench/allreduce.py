"""Runs troupe's ring all-reduce and PyTorch's gloo all_reduce side by side and reports ratios.

  /usr/bin/python3 bench/allreduce.py [--build build] [--ranks 2,3,4] [--sizes-mb 1,16,128]
                                      [--iters 10] [--warmup 2] [--bucket-mb 1] [--window 8]
                                      [--tls]

For each number of processes it runs bench/allreduce.cpp (troupe: CAF actors, the ring of
actors/ring_exchange.hpp) and bench/allreduce_gloo.py (reference) one after the other on
loopback. Prints JSON: per (ranks, size) the bus bandwidth of each, 2(N - 1)/N x bytes / time
in GB/s, and troupe / gloo (target >= 1.0 at 16 and 128 MB). --tls: troupe's processes talk
over mutual TLS (gloo's never do); bench/tls_cost.py compares troupe with and without it.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, timeout=600).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--ranks", default="2,3,4")
    p.add_argument("--sizes-mb", default="1,16,128")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--bucket-mb", type=float, default=1)
    p.add_argument("--window", type=int, default=8)
    p.add_argument("--tls", action="store_true", help="troupe's ranks use mutual TLS")
    args = p.parse_args()
    common = ["--sizes-mb", args.sizes_mb, "--iters", str(args.iters), "--warmup",
              str(args.warmup)]
    rows = []
    for ranks in [int(x) for x in args.ranks.split(",")]:
        troupe = run([os.path.join(args.build, "bench", "allreduce_bench"), "--ranks", str(ranks),
                      "--bucket-mb", str(args.bucket_mb), "--window", str(args.window)] + common
                     + (["--tls"] if args.tls else []))
        gloo = run([sys.executable, os.path.join(HERE, "allreduce_gloo.py"), "--ranks",
                    str(ranks)] + common)
        for t, g in zip(troupe["results"], gloo["results"]):
            row = {"ranks": ranks, "size_mb": t["size_mb"],
                   "troupe_busbw_gbs": round(t["busbw_gbs"], 3),
                   "gloo_busbw_gbs": round(g["busbw_gbs"], 3),
                   "troupe_median_ms": round(t["median_s"] * 1e3, 2),
                   "gloo_median_ms": round(g["median_s"] * 1e3, 2),
                   "ratio": round(t["busbw_gbs"] / g["busbw_gbs"], 3)}
            rows.append(row)
            print(f"{ranks} procs {t['size_mb']:g} MB: troupe {row['troupe_busbw_gbs']} GB/s, "
                  f"gloo {row['gloo_busbw_gbs']} GB/s, ratio {row['ratio']}", file=sys.stderr)
    print(json.dumps({"bucket_mb": args.bucket_mb, "window": args.window, "tls": args.tls,
                      "results": rows},
                     indent=1))


if __name__ == "__main__":
    main()
