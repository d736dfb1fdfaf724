"""DiLoCo (local SGD with an outer Nesterov step) against plain local SGD and sync, over emulated
hosts on slow links: the test accuracy each reaches per wall-second, side by side.

  /usr/bin/python3 bench/diloco_hosts.py [--build build] [--hosts 4] [--rates 200mbit,20mbit]
      [--steps 400] [--evals 8] [--period 8] [--outer '{"lr": 0.7, "momentum": 0.9}']
      [--fragments 4] [--overlap 2] [--mix 0.5]
      [--job configs/fashion_mlp_sync.json] [--svg PLOT.svg]
  /usr/bin/python3 bench/diloco_hosts.py --replot RESULT.json --svg PLOT.svg

Runs the job (parallelism.replicas = HOSTS, a node on each host) over scripts/emulate_hosts.sh
(each host link shaped to RATE both ways) at each rate as
  sync       the ring all-reduce every step
  local_sgd  parallelism.policy "local_sgd", period PERIOD: the plain average
  diloco     the same with parallelism.outer_optimizer OUTER (Nesterov by default)
  streaming  diloco with parallelism.fragments FRAGMENTS: one fragment averaged (and outer-
             stepped) every PERIOD / FRAGMENTS steps instead of the whole model every PERIOD
  overlapped streaming with parallelism.fragment_overlap OVERLAP (default PERIOD / FRAGMENTS:
             each fragment's average merged just before the next one is handed in) and
             fragment_mix MIX: the replicas go on while a fragment's average is on its way
one after the other, evaluating EVALS times. Prints JSON: per rate and variant the test accuracy
at each evaluation against the wall-seconds since the first step (the curve a plot would draw),
the final accuracy, accuracy per wall-second, the seconds to reach the lowest final accuracy of
the three, and the bytes each worker sends per step (sync: 2(N - 1)/N of the weights' bytes in
the ring; local SGD: the weights once a period, and as much back). Where the machine
cannot emulate hosts, prints why and exits 0. --svg draws the curves (test accuracy against
wall-seconds, a panel per rate); --replot draws them from a result printed before.
"""
import argparse
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from emulated_hosts import Skipped, emulate_run  # noqa: E402


def write_job(job, steps, evals, work):
    with open(job) as f:
        spec = json.load(f)
    spec.setdefault("training", {}).pop("epochs", None)
    spec["training"]["steps"] = steps
    spec["training"]["eval_interval"] = max(1, steps // evals)
    path = os.path.join(work, "job.json")
    with open(path, "w") as f:
        json.dump(spec, f)
    return path


def curve(out):
    """(seconds since the first step, test accuracy) at each evaluation."""
    first, points = None, []
    with open(os.path.join(out, "metrics.jsonl")) as f:
        for line in f:
            r = json.loads(line)
            if r.get("event") == "step" and first is None:
                first = r["t"]
            if r.get("event") == "eval" and "test_accuracy" in r:
                points.append((r["t"] - (first or 0), r["test_accuracy"]))
    return points


def gradient_bytes(out, ranks):
    """The float32 weights' bytes, from the plan's ring figure (2(N - 1)/N of them a step)."""
    with open(os.path.join(out, "plan.txt")) as f:
        m = re.search(r"each replica sends (\d+) bytes per step", f.read())
    return round(int(m.group(1)) * ranks / (2 * (ranks - 1))) if m else None


COLORS = {"sync": "#1f77b4", "local_sgd": "#2ca02c", "diloco": "#d62728",
          "streaming": "#9467bd", "overlapped": "#ff7f0e"}


def plot(result, path):
    """The accuracy curves as an SVG: one panel per rate, one line per policy."""
    rates = list(result["rates"])
    w, h, pad = 420, 300, 50
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w * len(rates)}" height="{h}" '
           'font-family="sans-serif" font-size="11">']
    for i, rate in enumerate(rates):
        runs = result["rates"][rate]
        x0 = i * w
        t_max = max(p[0] for r in runs.values() for p in r["curve"]) or 1
        accs = [p[1] for r in runs.values() for p in r["curve"]]
        a_lo, a_hi = min(accs) - 0.02, max(accs) + 0.02

        def xy(t, a):
            return (x0 + pad + (w - 2 * pad) * t / t_max,
                    h - pad - (h - 2 * pad) * (a - a_lo) / (a_hi - a_lo))
        out.append(f'<text x="{x0 + w / 2}" y="20" text-anchor="middle">{rate}: test accuracy '
                   'against wall-seconds</text>')
        out.append(f'<line x1="{x0 + pad}" y1="{h - pad}" x2="{x0 + w - pad}" y2="{h - pad}" '
                   'stroke="black"/>')
        out.append(f'<line x1="{x0 + pad}" y1="{pad}" x2="{x0 + pad}" y2="{h - pad}" '
                   'stroke="black"/>')
        out.append(f'<text x="{x0 + w - pad}" y="{h - pad + 16}" text-anchor="end">'
                   f'{t_max:.1f} s</text>')
        out.append(f'<text x="{x0 + pad - 4}" y="{pad + 4}" text-anchor="end">{a_hi:.2f}</text>')
        out.append(f'<text x="{x0 + pad - 4}" y="{h - pad}" text-anchor="end">{a_lo:.2f}</text>')
        for k, (name, r) in enumerate(runs.items()):
            points = " ".join(f"{x:.1f},{y:.1f}" for x, y in (xy(t, a) for t, a in r["curve"]))
            color = COLORS.get(name, "black")
            out.append(f'<polyline fill="none" stroke="{color}" stroke-width="2" '
                       f'points="{points}"/>')
            out.append(f'<text x="{x0 + w - pad}" y="{h - pad - 40 + 14 * k}" fill="{color}" '
                       f'text-anchor="end">{name}</text>')
    out.append("</svg>")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--rates", default="200mbit,20mbit")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--evals", type=int, default=8)
    p.add_argument("--period", type=int, default=8)
    p.add_argument("--outer", default='{"lr": 0.7, "momentum": 0.9}')
    p.add_argument("--fragments", type=int, default=4)
    p.add_argument("--overlap", type=int, help="default: period / fragments")
    p.add_argument("--mix", type=float, default=0.5)
    p.add_argument("--job", default=os.path.join(HERE, "..", "configs", "fashion_mlp_sync.json"))
    p.add_argument("--svg", help="draw the curves into this SVG file")
    p.add_argument("--replot", help="draw --svg from this result JSON and run nothing")
    args = p.parse_args()
    if args.replot:
        if not args.svg:
            sys.exit("--replot needs --svg")
        with open(args.replot) as f:
            plot(json.load(f), args.svg)
        return
    overlap = args.overlap if args.overlap is not None else args.period // args.fragments
    variants = {
        "sync": [],
        "local_sgd": ["--set", "parallelism.policy=local_sgd",
                      "--set", f"parallelism.period={args.period}"],
        "diloco": ["--set", "parallelism.policy=local_sgd",
                   "--set", f"parallelism.period={args.period}",
                   "--set", f"parallelism.outer_optimizer={args.outer}"],
        "streaming": ["--set", "parallelism.policy=local_sgd",
                      "--set", f"parallelism.period={args.period}",
                      "--set", f"parallelism.outer_optimizer={args.outer}",
                      "--set", f"parallelism.fragments={args.fragments}"],
        "overlapped": ["--set", "parallelism.policy=local_sgd",
                       "--set", f"parallelism.period={args.period}",
                       "--set", f"parallelism.outer_optimizer={args.outer}",
                       "--set", f"parallelism.fragments={args.fragments}",
                       "--set", f"parallelism.fragment_overlap={overlap}",
                       "--set", f"parallelism.fragment_mix={args.mix}"],
    }
    result = {"benchmark": "diloco_hosts", "hosts": args.hosts, "steps": args.steps,
              "period": args.period, "outer": json.loads(args.outer),
              "fragments": args.fragments, "overlap": overlap, "mix": args.mix,
              "job": os.path.basename(args.job), "rates": {}}
    with tempfile.TemporaryDirectory() as work:
        job = write_job(args.job, args.steps, args.evals, work)
        for rate in args.rates.split(","):
            runs = {}
            for name, sets in variants.items():
                out = os.path.join(work, f"{rate}-{name}")
                emulate_run(args.hosts, 1, rate, args.build, job, out,
                            ["--set", f"parallelism.replicas={args.hosts}"] + sets,
                            f"{rate} {name}")
                points = curve(out)
                weights = gradient_bytes(out, args.hosts)
                seconds, final = points[-1]
                runs[name] = {"curve": [[round(t, 3), a] for t, a in points],
                              "final_accuracy": final, "seconds": seconds,
                              "accuracy_per_s": final / seconds,
                              # sync: the ring's 2(N - 1)/N; local SGD: the weights once a
                              # period, to the coordinator (and the average back)
                              "bytes_sent_per_step": None if weights is None else round(
                                  weights * (2 * (args.hosts - 1) / args.hosts if name == "sync"
                                             else 1 / args.period))}
            floor = min(r["final_accuracy"] for r in runs.values())
            for r in runs.values():
                r["seconds_to_reach_" + str(floor)] = next(t for t, a in r["curve"] if a >= floor)
            result["rates"][rate] = runs
    if args.svg:
        plot(result, args.svg)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    try:
        main()
    except Skipped as why:
        print(json.dumps({"benchmark": "diloco_hosts", "skipped": str(why)}, indent=2))
