"""A fitted cost model of troupe's all-reduces, and what it predicts at 256 and 1,024 ranks.

  /usr/bin/python3 bench/cost_model.py [--build build] [--ranks 2,3,4] [--sizes-mb 0.004,0.25,1,4,16]
      [--iters 10] [--link-gbit 1] [--link-delay-ms 0.2] [--per-host 8] [--markdown]

1. Measures bench/allreduce.cpp between processes on this host: the socket ring (`tcp`, the
   path between hosts), gloo's halving-doubling (`gloo`, cluster.collective "gloo") and the
   shared-memory segment (`shm`, the path inside a host), at each RANKS and SIZE (median of
   ITERS).
2. Fits, by least squares on relative errors, the ring's time as 2(N - 1) hops of latency alpha plus
   2(N - 1)/N x bytes at beta seconds a byte, gloo's as 2 ceil(log2 N) hops of its own latency
   plus 2(N - 1)/N x bytes at its own rate (the same bytes; its sums do not overlap its sends),
   and the segment's as a constant plus gamma seconds a byte; prints the fits and each point's
   relative error.
3. Predicts one sync step's all-reduce of a 1 MB (this MLP's) and a 100 MB gradient at 256 and
   1,024 ranks, PER_HOST ranks a host, over links of LINK_GBIT with LINK_DELAY_MS one way
   (alpha on such a link: the fitted software alpha plus the delay; beta: the link's, or the
   fitted one where that is slower), for:
     flat          one ring of every rank: 2(N - 1) alpha + 2(N - 1)/N S beta
     hierarchical  troupe's sum by host: the host's segment (gamma S, twice: sum, hand back)
                   plus a ring of the H = N / PER_HOST leaders: 2(H - 1) alpha + 2(H - 1)/H S beta
     gloo          gloo's halving-doubling among every rank (cluster.collective "gloo",
                   shared_memory false): 2 log2(N) alpha_g + 2(N - 1)/N S beta_g
     gloo_by_host  the host's segment, then gloo among the H leaders (cluster.collective
                   "gloo" with the default sum by host)
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


def halving_doubling_hops(n):
    return 2 * math.ceil(math.log2(n)) if n > 1 else 0


def gloo_time(n, size, alpha, beta):
    return halving_doubling_hops(n) * alpha + 2 * (n - 1) / n * size * beta


def fitted_points(points, model):
    return [{"ranks": n, "size_mb": s / MB, "measured_ms": t * 1e3, "model_ms": model(n, s) * 1e3,
             "error": model(n, s) / t - 1} for n, s, t in points]


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

    tcp, shm, gloo = [], [], []
    for n in (int(x) for x in args.ranks.split(",")):
        tcp += measure(args.build, "tcp", n, args.sizes_mb, args.iters)
        shm += measure(args.build, "shm", n, args.sizes_mb, args.iters)
        gloo += measure(args.build, "gloo", n, args.sizes_mb, args.iters)
    # Ring: t = alpha * 2(N-1) + beta * 2(N-1)/N * S.
    alpha, beta = least_squares([(2 * (n - 1), 2 * (n - 1) / n * s) for n, s, _ in tcp],
                                [t for _, _, t in tcp])
    # Segment: t = c + gamma * S (two barriers and two passes over the buffer, whatever N is here).
    c, gamma = least_squares([(1.0, s) for _, s, _ in shm], [t for _, _, t in shm])
    alpha_g, beta_g = least_squares(
        [(halving_doubling_hops(n), 2 * (n - 1) / n * s) for n, s, _ in gloo],
        [t for _, _, t in gloo])
    fit = {
        "ring_alpha_us": alpha * 1e6, "ring_beta_gb_per_s": 1e-9 / beta if beta > 0 else None,
        "segment_constant_us": c * 1e6, "segment_gb_per_s": 1e-9 / gamma if gamma > 0 else None,
        "gloo_alpha_us": alpha_g * 1e6,
        "gloo_beta_gb_per_s": 1e-9 / beta_g if beta_g > 0 else None,
        "ring_points": fitted_points(tcp, lambda n, s: ring_time(n, s, alpha, beta)),
        "gloo_points": fitted_points(gloo, lambda n, s: gloo_time(n, s, alpha_g, beta_g)),
        "segment_points": fitted_points(shm, lambda n, s: c + gamma * s),
    }
    link_alpha = alpha + args.link_delay_ms * 1e-3
    link_beta = max(beta, 8 / (args.link_gbit * 1e9))
    link_alpha_g = alpha_g + args.link_delay_ms * 1e-3
    link_beta_g = max(beta_g, 8 / (args.link_gbit * 1e9))
    predictions = []
    for n in (256, 1024):
        hosts = max(1, n // args.per_host)
        for size_mb in (1, 100):
            s = size_mb * MB
            flat = ring_time(n, s, link_alpha, link_beta)
            hier = 2 * (c + gamma * s) + ring_time(hosts, s, link_alpha, link_beta)
            tree = 2 * math.log2(n) * link_alpha + 2 * s * link_beta
            flat_gloo = gloo_time(n, s, link_alpha_g, link_beta_g)
            gloo_by_host = 2 * (c + gamma * s) + gloo_time(hosts, s, link_alpha_g, link_beta_g)
            times = {"flat": flat, "hierarchical": hier, "gloo": flat_gloo,
                     "gloo_by_host": gloo_by_host, "tree": tree}
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
        print("\n| ranks (hosts) | gradient | flat ring | by host | gloo | gloo by host | tree "
              "| fastest |")
        print("|---|---|---|---|---|---|---|---|")
        for r in predictions:
            m = r["ms"]
            print(f"| {r['ranks']} ({r['hosts']}) | {r['size_mb']} MB | {m['flat']:.1f} ms | "
                  f"{m['hierarchical']:.1f} ms | {m['gloo']:.1f} ms | {m['gloo_by_host']:.1f} ms "
                  f"| {m['tree']:.1f} ms | {r['fastest']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
