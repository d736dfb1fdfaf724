"""Compares a suite's stopping rules side by side on one sweep: the grid run whole, median
stopping (`stop_losers`) and ASHA (`asha`), and reports the best validation accuracy each found
per CPU-second.

  /usr/bin/python3 bench/search_rules.py [--build build] [--model cnn|mlp] [--out DIR]

The sweep: 12 settings (optimizer.lr 0.003 .. 1 x momentum 0, 0.9) on Fashion-MNIST with 10%
held out for validation, each job on one thread, two at a time (a 2-core machine). The three
suites differ only in their rule. CPU-seconds are the jobs' wall seconds summed (one thread
each), from each suite's summary.json; steps are what the jobs trained. Which jobs ASHA stops
depends on the order they reach a rung, so figures vary a little from run to run.

Prints JSON: per rule the best validation accuracy, the job CPU-seconds, the steps trained, the
jobs stopped, the suite's wall seconds and best accuracy per CPU-second; and the ratios of each
rule's CPU-seconds and steps to the grid's.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

MODELS = {
    "cnn": ({"type": "cnn", "channels": [8, 16], "hidden": [64]}, 300, 50),
    "mlp": ({"type": "mlp", "hidden": [128]}, 600, 100),
}
RULES = {
    "grid": lambda first_rung: {},
    "median": lambda first_rung: {"stop_losers": {"after": 2}},
    "asha": lambda first_rung: {"asha": {"min_steps": first_rung, "reduction": 3}},
}


def suite(name, model, steps, eval_interval, rule):
    return dict({"name": name, "model": model, "data": {"validation": 0.1},
                 "optimizer": {"type": "sgd"},
                 "training": {"steps": steps, "batch_size": 64, "eval_interval": eval_interval},
                 "devices": [{"device": "cpu", "threads": 2}],
                 "sweep": {"optimizer.lr": [0.003, 0.01, 0.03, 0.1, 0.3, 1.0],
                           "optimizer.momentum": [0.0, 0.9]}}, **rule)


def figures(folder):
    summary = json.load(open(os.path.join(folder, "summary.json")))
    jobs = summary["jobs"]
    steps = sum(json.load(open(os.path.join(folder, j["name"], "summary.json"))).get("steps", 0)
                for j in jobs)
    cpu_s = sum(j.get("wall_s") or 0 for j in jobs)
    best = max((j.get("validation_accuracy") or 0) for j in jobs)
    return {"best_validation_accuracy": best, "job_cpu_s": round(cpu_s, 1), "steps": steps,
            "stopped": sum(1 for j in jobs if j["status"] == "stopped"), "jobs": len(jobs),
            "best_per_cpu_s": round(best / cpu_s, 5) if cpu_s else None}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", default="build")
    parser.add_argument("--model", choices=sorted(MODELS), default="cnn")
    parser.add_argument("--out", default=None, help="keep the suites' folders here")
    args = parser.parse_args()
    troupe = os.path.join(args.build, "apps", "troupe")
    model, steps, eval_interval = MODELS[args.model]
    out = args.out or tempfile.mkdtemp(prefix="troupe-search-rules-")
    result = {"model": args.model, "steps": steps, "eval_interval": eval_interval, "rules": {}}
    for rule, extra in RULES.items():
        spec = os.path.join(out, rule + ".json")
        json.dump(suite(rule, model, steps, eval_interval, extra(eval_interval)), open(spec, "w"))
        folder = os.path.join(out, rule)
        start = time.monotonic()
        run = subprocess.run([troupe, "run", spec, "--out", folder, "--quiet"],
                             capture_output=True, text=True)
        if run.returncode != 0:
            sys.exit(f"{rule}: troupe run exited {run.returncode}: {run.stdout}{run.stderr}")
        result["rules"][rule] = dict(figures(folder),
                                     suite_wall_s=round(time.monotonic() - start, 1))
    grid = result["rules"]["grid"]
    for rule in ("median", "asha"):
        r = result["rules"][rule]
        result[f"{rule}_cpu_s_over_grid"] = round(r["job_cpu_s"] / grid["job_cpu_s"], 3)
        result[f"{rule}_steps_over_grid"] = round(r["steps"] / grid["steps"], 3)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
