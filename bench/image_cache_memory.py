"""An image folder's decoded pixels in the process's memory or in a scratch file (data.image.cache
"memory" against "disk"), side by side in one run (issue 40: image folders larger than memory).

  /usr/bin/python3 bench/image_cache_memory.py [--build build] [--images 5000] [--steps 150]
      [--memory-limit-mb MB] [--keep DIR]

Makes a folder of --images 224x224 RGB JPEGs from Fashion-MNIST (bench/image_loading.py's, a
folder per class; 500 more as the test folder), then trains the same job on it with each cache:
an MLP (hidden 64) on the 3x224x224 images, 1 replica of 2 threads, batch 32, --steps steps,
random crops and flips. While each runs, the troupe process's anonymous memory (RssAnon in
/proc/PID/status: not the page cache a scratch file's pages belong to) is sampled every 50 ms.

With --memory-limit-mb each run is a cgroup's only process (cgroup v1's memory controller, as
root), limited to that much memory, page cache included (the kernel reclaims page cache first;
anonymous memory it cannot reclaim without swap): below the decoded bytes, "disk" should train
and "memory" be killed, which the JSON says ("completed", the exit status).

Prints JSON: per cache the largest RssAnon and the training steps per second (after the first
10% of step records), and
  decoded_bytes              images x 3 x 224 x 224: what "memory" holds and "disk" does not
  rss_anon_saved_bytes       memory's largest RssAnon less disk's (about decoded_bytes)
  step_rate_ratio            disk's steps/s over memory's (the page cache serves both)
"""
import argparse
import json
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from image_loading import fashion, make_folder  # noqa: E402
from npy_memory import run_sampled, steps_per_second  # noqa: E402


CGROUP_ROOT = "/sys/fs/cgroup/memory"


def memory_cgroup(limit_mb):
    """A fresh cgroup v1 memory cgroup limited to limit_mb (swap too, where accounted)."""
    if not os.access(CGROUP_ROOT, os.W_OK):
        sys.exit(f"--memory-limit-mb needs cgroup v1's memory controller, writable, at {CGROUP_ROOT}")
    path = os.path.join(CGROUP_ROOT, f"troupe-image-cache-{os.getpid()}")
    os.makedirs(path, exist_ok=True)
    limit = str(limit_mb * 2**20)
    with open(os.path.join(path, "memory.limit_in_bytes"), "w") as f:
        f.write(limit)
    swap = os.path.join(path, "memory.memsw.limit_in_bytes")
    if os.path.exists(swap):
        with open(swap, "w") as f:
            f.write(limit)
    return path


def train(troupe, folder, cache, steps, cgroup=None):
    data = {"type": "image_folder", "train": os.path.join(folder, "train"),
            "test": os.path.join(folder, "test"),
            "image": {"size": [224, 224], "channels": 3, "cache": cache},
            "augment": {"random_crop_padding": 8, "horizontal_flip": True}}
    if cache == "disk":
        data["image"]["cache_dir"] = folder
    job = {"name": f"cache_{cache}", "seed": 1, "model": {"type": "mlp", "hidden": [64]},
           "data": data, "optimizer": {"type": "sgd", "lr": 0.01, "momentum": 0.9},
           "training": {"steps": steps, "batch_size": 32, "eval_interval": steps},
           "parallelism": {"policy": "sync", "replicas": 1, "threads_per_replica": 2}}
    path = os.path.join(folder, f"cache_{cache}.json")
    with open(path, "w") as f:
        json.dump(job, f)
    out = os.path.join(folder, f"cache_{cache}")
    def join_cgroup():  # in the child, before troupe starts: all it allocates is charged there
        if cgroup:
            with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))

    status, err, peak = run_sampled([troupe, "run", path, "--out", out, "--quiet"],
                                    preexec_fn=join_cgroup)
    if status != 0:
        if not cgroup:
            sys.exit(f"cache {cache}: troupe failed: {err}")
        return {"completed": False, "exit_status": status, "rss_anon_max_bytes": peak}
    return {"completed": True, "rss_anon_max_bytes": peak,
            "steps_per_s": steps_per_second(os.path.join(out, "metrics.jsonl"))}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--images", type=int, default=5000)
    p.add_argument("--steps", type=int, default=150)
    p.add_argument("--memory-limit-mb", type=int, default=0,
                   help="run each variant in a memory cgroup of this many MB (0: none)")
    p.add_argument("--keep", help="a folder to keep the images and runs in (else a temporary one)")
    a = p.parse_args()
    troupe = os.path.abspath(os.path.join(a.build, "apps", "troupe"))
    folder = a.keep or tempfile.mkdtemp(prefix="troupe-image-cache-")
    os.makedirs(folder, exist_ok=True)
    try:
        x, y = fashion()
        if not os.path.isdir(os.path.join(folder, "train")):
            make_folder(os.path.join(folder, "train"), x[:a.images], y[:a.images], "jpg")
            make_folder(os.path.join(folder, "test"), x[-500:], y[-500:], "jpg")
        cgroup = memory_cgroup(a.memory_limit_mb) if a.memory_limit_mb else None
        try:
            runs = {cache: train(troupe, folder, cache, a.steps, cgroup)
                    for cache in ("memory", "disk")}
        finally:
            if cgroup:
                os.rmdir(cgroup)
        result = {"benchmark": "image_cache_memory", "images": a.images, "steps": a.steps,
                  "memory_limit_mb": a.memory_limit_mb or None,
                  "decoded_bytes": a.images * 3 * 224 * 224, "runs": runs}
        if all(r["completed"] for r in runs.values()):
            result["rss_anon_saved_bytes"] = (runs["memory"]["rss_anon_max_bytes"] -
                                              runs["disk"]["rss_anon_max_bytes"])
            result["step_rate_ratio"] = runs["disk"]["steps_per_s"] / runs["memory"]["steps_per_s"]
        print(json.dumps(result, indent=2))
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
