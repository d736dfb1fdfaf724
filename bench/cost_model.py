"""A fitted cost model of troupe's all-reduces, and what it predicts at 256 and 1,024 ranks.

  /usr/bin/python3 bench/cost_model.py [--build build] [--ranks 2,3,4] [--sizes-mb 0.004,0.25,1,4,16]
      [--iters 10] [--link-gbit 1] [--link-delay-ms 0.2] [--per-host 8] [--markdown]

1. Measures bench/allreduce.cpp between processes on this host: the socket ring (`tcp`, the
   path between hosts) and the shared-memory segment (`shm`, the path inside a host), at each
   RANKS and SIZE (median of ITERS).
2. Fits, by least squares on relative errors, the ring's time as 2(N - 1) hops of latency alpha plus
   2(N - 1)/N x bytes at beta seconds a byte, and the segment's as a constant plus gamma seconds
   a byte; prints the fitted alpha, beta, gamma and each point's relative error.
3. Predicts one sync step's all-reduce of a 1 MB (this MLP's) and a 100 MB gradient at 256 and
   1,024 ranks, PER_HOST ranks a host, over links of LINK_GBIT with LINK_DELAY_MS one way
   (alpha on such a link: the fitted software alpha plus the delay; beta: the link's, or the
   fitted one where that is slower), for:
     flat          one ring of every rank: 2(N - 1) alpha + 2(N - 1)/N S beta
     hierarchical  troupe's sum by host: the host's segment (gamma S, twice: sum, hand back)
                   plus a ring of the H = N / PER_HOST leaders: 2(H - 1) alpha + 2(H - 1)/H S beta
     tree          a pipelined double binary tree (NCCL's shape, not in troupe):
                   2 log2(N) alpha + 2 S beta
The emulated hosts of this machine have no delay (no netem in its kernel): the link figures are
a model, not a measurement. Prints JSON (--markdown: the table for the README as well).
"""
import argparse
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from allreduce import run as allreduce_run  # noqa: E402

MB = 1 << 20


def measure(build, transport, ranks, sizes, iters):
    """(ranks, bytes, median seconds) of allreduce_bench at each size."""
    cmd = [os.path.join(build, "bench", "allreduce_bench"), "--ranks", str(ranks), "--sizes-mb",
           sizes, "--iters", str(iters), "--warmup", "2", "--transport", transport]
    return [(ranks, size_mb * MB, r["median_s"]) for size_mb, r in allreduce_run(cmd).items()]


def least_squares(rows, times):
    """x minimising the squared relative errors, sum ((A x)_i / t_i - 1)^2, for two columns
    (normal equations, no numpy needed): a 4 KB point counts as much as a 16 MB one."""
    rows = [(r[0] / t, r[1] / t) for r, t in zip(rows, times)]
    times = [1.0] * len(times)
    a11 = sum(r[0] * r[0] for r in rows)
    a12 = sum(r[0] * r[1] for r in rows)
    a22 = sum(r[1] * r[1] for r in rows)
    b1 = sum(r[0] * t for r, t in zip(rows, times))
    b2 = sum(r[1] * t for r, t in zip(rows, times))
    det = a11 * a22 - a12 * a12
    return (b1 * a22 - b2 * a12) / det, (a11 * b2 - a12 * b1) / det


def ring_time(n, size, alpha, beta):
    return 2 * (n - 1) * alpha + 2 * (n - 1) / n * size * beta


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--ranks", default="2,3,4")
    p.add_argument("--sizes-mb", default="0.004,0.25,1,4,16")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--link-gbit", type=float, default=1.0)
    p.add_argument("--link-delay-ms", type=float, default=0.2)
    p.add_argument("--per-host", type=int, default=8)
    p.add_argument("--markdown", action="store_true")
    args = p.parse_args()

    tcp, shm = [], []
    for n in (int(x) for x in args.ranks.split(",")):
        tcp += measure(args.build, "tcp", n, args.sizes_mb, args.iters)
        shm += measure(args.build, "shm", n, args.sizes_mb, args.iters)
    # Ring: t = alpha * 2(N-1) + beta * 2(N-1)/N * S.
    alpha, beta = least_squares([(2 * (n - 1), 2 * (n - 1) / n * s) for n, s, _ in tcp],
                                [t for _, _, t in tcp])
    # Segment: t = c + gamma * S (two barriers and two passes over the buffer, whatever N is here).
    c, gamma = least_squares([(1.0, s) for _, s, _ in shm], [t for _, _, t in shm])
    fit = {
        "ring_alpha_us": alpha * 1e6, "ring_beta_gb_per_s": 1e-9 / beta if beta > 0 else None,
        "segment_constant_us": c * 1e6, "segment_gb_per_s": 1e-9 / gamma if gamma > 0 else None,
        "ring_points": [{"ranks": n, "size_mb": s / MB, "measured_ms": t * 1e3,
                         "model_ms": ring_time(n, s, alpha, beta) * 1e3,
                         "error": ring_time(n, s, alpha, beta) / t - 1} for n, s, t in tcp],
        "segment_points": [{"ranks": n, "size_mb": s / MB, "measured_ms": t * 1e3,
                            "model_ms": (c + gamma * s) * 1e3,
                            "error": (c + gamma * s) / t - 1} for n, s, t in shm],
    }
    link_alpha = alpha + args.link_delay_ms * 1e-3
    link_beta = max(beta, 8 / (args.link_gbit * 1e9))
    predictions = []
    for n in (256, 1024):
        hosts = max(1, n // args.per_host)
        for size_mb in (1, 100):
            s = size_mb * MB
            flat = ring_time(n, s, link_alpha, link_beta)
            hier = 2 * (c + gamma * s) + ring_time(hosts, s, link_alpha, link_beta)
            tree = 2 * math.log2(n) * link_alpha + 2 * s * link_beta
            times = {"flat": flat, "hierarchical": hier, "tree": tree}
            predictions.append({"ranks": n, "hosts": hosts, "size_mb": size_mb,
                                "ms": {k: v * 1e3 for k, v in times.items()},
                                "fastest": min(times, key=times.get)})
    result = {"benchmark": "cost_model", "fit": fit,
              "link": {"gbit_per_s": args.link_gbit, "delay_ms": args.link_delay_ms,
                       "alpha_us": link_alpha * 1e6, "per_host": args.per_host,
                       "note": "a model: this machine's emulated links carry no delay"},
              "predictions": predictions}
    print(json.dumps(result, indent=2))
    if args.markdown:
        print("\n| ranks (hosts) | gradient | flat ring | by host | tree | fastest |")
        print("|---|---|---|---|---|---|")
        for r in predictions:
            m = r["ms"]
            print(f"| {r['ranks']} ({r['hosts']}) | {r['size_mb']} MB | {m['flat']:.1f} ms | "
                  f"{m['hierarchical']:.1f} ms | {m['tree']:.1f} ms | {r['fastest']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
