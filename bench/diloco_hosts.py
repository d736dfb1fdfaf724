"""DiLoCo (local SGD with an outer Nesterov step) against plain local SGD and sync, over emulated
hosts on slow links: the test accuracy each reaches per wall-second, side by side.

  /usr/bin/python3 bench/diloco_hosts.py [--build build] [--hosts 4] [--rates 200mbit,20mbit]
      [--steps 400] [--evals 8] [--period 8] [--outer '{"lr": 0.7, "momentum": 0.9}']
      [--job configs/fashion_mlp_sync.json]

Runs the job (parallelism.replicas = HOSTS, a node on each host) over scripts/emulate_hosts.sh
(each host link shaped to RATE both ways) at each rate as
  sync       the ring all-reduce every step
  local_sgd  parallelism.policy "local_sgd", period PERIOD: the plain average
  diloco     the same with parallelism.outer_optimizer OUTER (Nesterov by default)
one after the other, evaluating EVALS times. Prints JSON: per rate and variant the test accuracy
at each evaluation against the wall-seconds since the first step (the curve a plot would draw),
the final accuracy, accuracy per wall-second, the seconds to reach the lowest final accuracy of
the three, and the bytes each worker sends per step (sync: 2(N - 1)/N of the weights' bytes in
the ring; local SGD: the weights once a period, and as much back). Where the machine
cannot emulate hosts, prints why and exits 0.
"""
import argparse
import json
import os
import re
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from emulated_hosts import SKIPPED, emulate  # noqa: E402


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


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--rates", default="200mbit,20mbit")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--evals", type=int, default=8)
    p.add_argument("--period", type=int, default=8)
    p.add_argument("--outer", default='{"lr": 0.7, "momentum": 0.9}')
    p.add_argument("--job", default=os.path.join(HERE, "..", "configs", "fashion_mlp_sync.json"))
    args = p.parse_args()
    variants = {
        "sync": [],
        "local_sgd": ["--set", "parallelism.policy=local_sgd",
                      "--set", f"parallelism.period={args.period}"],
        "diloco": ["--set", "parallelism.policy=local_sgd",
                   "--set", f"parallelism.period={args.period}",
                   "--set", f"parallelism.outer_optimizer={args.outer}"],
    }
    result = {"benchmark": "diloco_hosts", "hosts": args.hosts, "steps": args.steps,
              "period": args.period, "outer": json.loads(args.outer),
              "job": os.path.basename(args.job), "rates": {}}
    with tempfile.TemporaryDirectory() as work:
        job = write_job(args.job, args.steps, args.evals, work)
        for rate in args.rates.split(","):
            emulation = argparse.Namespace(hosts=args.hosts, nodes_per_host=1, rate=rate,
                                           build=args.build)
            runs = {}
            for name, sets in variants.items():
                out = os.path.join(work, f"{rate}-{name}")
                status, text = emulate(emulation, job, out, None,
                                       ["--set", f"parallelism.replicas={args.hosts}"] + sets)
                if status == SKIPPED:
                    print(json.dumps({"benchmark": "diloco_hosts",
                                      "skipped": text.strip().splitlines()[-1]}, indent=2))
                    return
                if status != 0:
                    raise RuntimeError(f"{rate} {name}: exit {status}\n{text[-2000:]}")
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
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
