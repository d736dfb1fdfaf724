"""How long a big tensor file takes to load, and the memory it takes (issue: your own data).

  /usr/bin/python3 bench/tensor_load.py [--build build] [--rows 60000] [--features 784]
      [--rounds 3]

Writes a float32 [rows, features] training file (and a 100-row test file) with torch.save, then
alternates, round by round, each in a fresh process:
  troupe_data       `troupe validate` of a job on that file: reads and checks it whole (the
                    plan is made from the loaded data)
  troupe_baseline   the same job on a 100-row file of the same row shape: the process's own
                    memory without the data
  torch_load        Python's torch.load of the file (the reference)
  torch_baseline    Python importing torch and loading the 100-row file
Prints JSON: each variant's median wall seconds and largest peak resident memory (from
wait4's rusage), the data's size, and
  troupe_extra_over_data   (troupe_data - troupe_baseline peak) / data bytes   (target <= 2)
  torch_extra_over_data    the same for torch.load
  troupe_seconds           (target: about a second)
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


def measure(cmd):
    """Wall seconds and peak RSS (bytes) of one child process."""
    start = time.monotonic()
    child = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.monotonic() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{' '.join(cmd)} failed: {child.stderr.read().decode()}")
    return seconds, usage.ru_maxrss * 1024


def job(folder, name, train, test):
    path = os.path.join(folder, name + ".json")
    with open(path, "w") as f:
        json.dump({"name": name, "model": {"type": "mlp", "hidden": [16]},
                   "data": {"type": "tensors", "train": train, "test": test},
                   "training": {"steps": 10, "batch_size": 64}}, f)
    return path


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--rows", type=int, default=60000)
    p.add_argument("--features", type=int, default=784)
    p.add_argument("--rounds", type=int, default=3)
    args = p.parse_args()
    troupe = os.path.join(args.build, "apps", "troupe")
    with tempfile.TemporaryDirectory() as folder:
        big = os.path.join(folder, "big.pt")
        small = os.path.join(folder, "small.pt")
        # In a child: this process stays small, since a child's peak RSS starts from its
        # parent's at the fork (Linux keeps the high-water mark across exec).
        write = ("import sys, torch; g = torch.Generator().manual_seed(0); "
                 "n, f = int(sys.argv[3]), int(sys.argv[4]); "
                 "torch.save({'x': torch.randn(n, f, generator=g), "
                 "'y': torch.randint(0, 10, (n,), generator=g)}, sys.argv[1]); "
                 "torch.save({'x': torch.randn(100, f, generator=g), "
                 "'y': torch.arange(100) % 10}, sys.argv[2])")
        subprocess.run([sys.executable, "-c", write, big, small, str(args.rows),
                        str(args.features)], check=True)
        load = "import sys, torch; d = torch.load(sys.argv[1]); print(d['x'].sum().item())"
        variants = {
            "troupe_data": [troupe, "validate", job(folder, "data", big, small)],
            "troupe_baseline": [troupe, "validate", job(folder, "baseline", small, small)],
            "torch_load": [sys.executable, "-c", load, big],
            "torch_baseline": [sys.executable, "-c", load, small],
        }
        seconds = {name: [] for name in variants}
        peak = {name: 0 for name in variants}
        for _ in range(args.rounds):
            for name, cmd in variants.items():
                s, rss = measure(cmd)
                seconds[name].append(s)
                peak[name] = max(peak[name], rss)
        data_bytes = args.rows * args.features * 4
    mb = 1 << 20
    print(json.dumps({
        "data_mb": data_bytes / mb,
        "seconds": {k: statistics.median(v) for k, v in seconds.items()},
        "peak_mb": {k: v / mb for k, v in peak.items()},
        "troupe_extra_over_data": (peak["troupe_data"] - peak["troupe_baseline"]) / data_bytes,
        "torch_extra_over_data": (peak["torch_load"] - peak["torch_baseline"]) / data_bytes,
        "troupe_seconds": statistics.median(seconds["troupe_data"]),
        "targets": {"troupe_extra_over_data": 2.0, "troupe_seconds": 1.0},
    }, indent=2))


if __name__ == "__main__":
    main()
