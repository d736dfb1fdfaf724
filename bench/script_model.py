"""Your own model against the built-in one, and against a plain LibTorch loop (issue: TorchScript).

  /usr/bin/python3 bench/script_model.py [--build build] [--rounds 3] [--steps 1000]

Writes two TorchScript files into a temporary folder: the built-in MLP scripted (784-256-128-10,
the same layers and names) and the small ResNet-style CNN with BatchNorm of
examples/your_model/make_model.py. Then, alternating the
variants round by round (bench/sync_overhead, one process per figure):
  builtin_mlp_2x1   troupe sync, 2 replicas x 1 thread, the built-in MLP
  script_mlp_2x1    the same run, the scripted MLP
  script_cnn_2x1    troupe sync, 2 replicas x 1 thread, the scripted BatchNorm CNN
  script_cnn_plain  a plain LibTorch loop (1 thread) running the same scripted module
Prints JSON: the median samples/s of each, every round, and the ratios
  script_mlp_2x1 / builtin_mlp_2x1   (target >= 0.95)
  script_cnn_2x1 / script_cnn_plain
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch
from torch import nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "your_model"))
from make_model import resnet  # noqa: E402  the example's ResNet-style CNN with BatchNorm


def models(folder):
    torch.manual_seed(1)
    mlp = nn.Sequential(collections.OrderedDict([
        ("flatten", nn.Flatten()), ("fc1", nn.Linear(784, 256)), ("act1", nn.ReLU()),
        ("fc2", nn.Linear(256, 128)), ("act2", nn.ReLU()), ("out", nn.Linear(128, 10))]))
    cnn = resnet()
    paths = {}
    for name, module in (("mlp", mlp), ("cnn", cnn)):
        paths[name] = os.path.join(folder, name + ".pt")
        torch.jit.script(module).save(paths[name])
    return paths


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--cnn-steps", type=int, default=150)
    args = p.parse_args()
    exe = os.path.join(args.build, "bench", "sync_overhead")
    with tempfile.TemporaryDirectory() as folder:
        files = models(folder)
        mlp = ["--steps", str(args.steps), "--warmup", "50"]
        cnn = ["--steps", str(args.cnn_steps), "--warmup", "10", "--script", files["cnn"]]
        variants = {
            "builtin_mlp_2x1": ["--variant", "troupe", "--replicas", "2"] + mlp,
            "script_mlp_2x1": ["--variant", "troupe", "--replicas", "2", "--script",
                               files["mlp"]] + mlp,
            "script_cnn_2x1": ["--variant", "troupe", "--replicas", "2"] + cnn,
            "script_cnn_plain": ["--variant", "plain", "--threads", "1"] + cnn,
        }
        rounds = {name: [] for name in variants}
        for _ in range(args.rounds):
            for name, extra in variants.items():
                out = subprocess.run([exe] + extra, capture_output=True, text=True)
                if out.returncode != 0:
                    sys.exit(f"{name}: {out.stderr.strip()}")
                rounds[name].append(json.loads(out.stdout)["samples_per_s"])
    median = {name: statistics.median(v) for name, v in rounds.items()}
    print(json.dumps({
        "samples_per_s": median,
        "rounds": rounds,
        "ratios": {
            "script_mlp_vs_builtin": median["script_mlp_2x1"] / median["builtin_mlp_2x1"],
            "script_cnn_troupe_2x1_vs_plain_1t":
                median["script_cnn_2x1"] / median["script_cnn_plain"],
        },
        "targets": {"script_mlp_vs_builtin": 0.95},
    }, indent=2))


if __name__ == "__main__":
    main()
