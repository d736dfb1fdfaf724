"""GPU workers on node processes (CUDA builds, on a GPU): 2 sync replicas on cuda:0 as
`troupe run JOB --local-nodes 2`, their gradients summed in host memory (the host's shared
memory, the socket ring, the ring over actors), end at the weights of the same job in one process
within the GPU tolerance.

  python3 tests/gpu/nodes_on_gpu.py TROUPE DATA_DIR [--device cpu]

Exit 77 (skipped) where PyTorch sees no GPU; `--device cpu` runs the same comparison on the CPU
(a check of the script itself). Needs python3's torch only to read the weights.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

import torch

GPU_TOLERANCE = 1e-4  # as tests/gpu/test_gpu_training.cpp: sums in another order over 50 steps

# (name, cluster keys, faults keys, what the coordinator's log must say)
LAYOUTS = (
    ("shared_memory", {"nodes": 2}, None, "share this host's memory"),
    ("socket_ring", {"nodes": 2, "shared_memory": False}, None, "socket ring, plain TCP"),
    ("actor_ring", {"nodes": 2, "shared_memory": False}, {"refuse_socket_ring": True},
     "the ring runs over actors"),
)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("troupe")
    parser.add_argument("data")
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args()
    if args.device != "cpu" and not torch.cuda.is_available():
        print("skipped: no CUDA device is visible")
        return 77
    folder = tempfile.mkdtemp(prefix="troupe-gpu-nodes-")
    base = {"name": "gpu_nodes", "seed": 3, "model": {"type": "mlp", "hidden": [64, 32]},
            "data": {"type": "fashion_mnist", "path": args.data},
            "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
            "training": {"steps": 50, "batch_size": 64, "eval_interval": 50},
            "parallelism": {"replicas": 2, "threads_per_replica": 1}, "device": args.device}

    def run(name, keys, local_nodes):
        path = os.path.join(folder, name + ".json")
        with open(path, "w") as f:
            json.dump(dict(base, **keys), f)
        out = os.path.join(folder, name)
        command = [args.troupe, "run", path, "--out", out]
        if local_nodes:
            command += ["--local-nodes", "2"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=240)
        if done.returncode != 0:
            raise RuntimeError(f"{name} exited {done.returncode}: {done.stderr[-2000:]}")
        return torch.load(os.path.join(out, "final_weights.pt")), done.stdout + done.stderr

    alone, _ = run("in_process", {}, False)
    failures = 0
    for name, cluster, faults, says in LAYOUTS:
        keys = {"cluster": cluster}
        if faults:
            keys["faults"] = faults
        try:
            weights, log = run(name, keys, True)
        except RuntimeError as e:
            print(f"{name}: FAILED: {e}")
            failures += 1
            continue
        diff = max(float((weights[k] - alone[k]).abs().max()) for k in alone)
        said = says in log
        ok = diff <= GPU_TOLERANCE and said
        print(f"{name}: max abs diff {diff:.3g} against one process"
              f"{'' if said else f'; the log does not say {says!r}'}: {'ok' if ok else 'FAILED'}")
        failures += not ok
    shutil.rmtree(folder, ignore_errors=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
