"""training.precision "bf16" against "fp32" on this machine's CPU, side by side in one run.

  /usr/bin/python3 bench/precision.py [--build build] [--rounds 3] [--steps 600]
      [--model mlp|cnn]

Runs `troupe run configs/fashion_mlp_sync.json` (Fashion-MNIST, 2 replicas x 1 thread) with the
built-in model asked for, once per precision per round, the precisions alternated so that
machine noise hits both alike, each run to its own folder. Prints JSON: per precision the
median samples/s and the test accuracy of each round, and
  bf16_over_fp32          samples/s ratio of the medians
  accuracy_gap_points     |bf16 - fp32| test accuracy, percentage points (median rounds)
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run(troupe, out, precision, steps, model):
    sets = ["--set", f"training.precision={precision}", "--set", f"training.steps={steps}",
            "--set", "training.eval_interval=0"]
    if model == "cnn":
        sets += ["--set", 'model={"type":"cnn","channels":[16,32],"hidden":[128]}']
    cmd = [troupe, "run", os.path.join(ROOT, "configs", "fashion_mlp_sync.json"), "--out", out,
           "--quiet", *sets]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:  # troupe's own message, not only "returned non-zero exit status"
        sys.exit(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr.strip()[-2000:]}")
    with open(os.path.join(out, "summary.json")) as f:
        s = json.load(f)
    return s["samples_per_s"], s["test_accuracy"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=600)
    parser.add_argument("--model", choices=("mlp", "cnn"), default="mlp")
    args = parser.parse_args()
    troupe = os.path.join(args.build, "apps", "troupe")
    figures = {"fp32": [], "bf16": []}
    with tempfile.TemporaryDirectory(prefix="troupe-precision-") as tmp:
        for r in range(args.rounds):
            for precision in ("fp32", "bf16"):
                out = os.path.join(tmp, f"{precision}-{r}")
                figures[precision].append(run(troupe, out, precision, args.steps, args.model))
    result = {"benchmark": "precision", "model": args.model, "steps": args.steps,
              "rounds": args.rounds}
    for precision, runs in figures.items():
        result[precision] = {"samples_per_s": statistics.median(s for s, _ in runs),
                             "rounds": [{"samples_per_s": s, "test_accuracy": a} for s, a in runs]}
    result["bf16_over_fp32"] = (result["bf16"]["samples_per_s"] /
                                result["fp32"]["samples_per_s"])
    accuracy = {p: statistics.median(a for _, a in runs) for p, runs in figures.items()}
    result["accuracy_gap_points"] = abs(accuracy["bf16"] - accuracy["fp32"]) * 100
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
