"""An image folder's decoded pixels in the process's memory or in a scratch file (data.image.cache
"memory" against "disk"), side by side in one run (issue 40: image folders larger than memory).

  /usr/bin/python3 bench/image_cache_memory.py [--build build] [--images 5000] [--steps 150]
      [--keep DIR]

Makes a folder of --images 224x224 RGB JPEGs from Fashion-MNIST (bench/image_loading.py's, a
folder per class; 500 more as the test folder), then trains the same job on it with each cache:
an MLP (hidden 64) on the 3x224x224 images, 1 replica of 2 threads, batch 32, --steps steps,
random crops and flips. While each runs, the troupe process's anonymous memory (RssAnon in
/proc/PID/status: not the page cache a scratch file's pages belong to) is sampled every 50 ms.

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
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from image_loading import fashion, make_folder  # noqa: E402
from npy_memory import rss_anon, steps_per_second  # noqa: E402


def train(troupe, folder, cache, steps):
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
    child = subprocess.Popen([troupe, "run", path, "--out", out, "--quiet"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peak = [0]

    def sample():
        while child.poll() is None:
            peak[0] = max(peak[0], rss_anon(child.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, err = child.communicate()
    sampler.join()
    if child.returncode != 0:
        sys.exit(f"cache {cache}: troupe failed: {err.decode()}")
    return {"rss_anon_max_bytes": peak[0],
            "steps_per_s": steps_per_second(os.path.join(out, "metrics.jsonl"))}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--images", type=int, default=5000)
    p.add_argument("--steps", type=int, default=150)
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
        runs = {cache: train(troupe, folder, cache, a.steps) for cache in ("memory", "disk")}
        decoded = a.images * 3 * 224 * 224
        print(json.dumps({
            "benchmark": "image_cache_memory", "images": a.images, "steps": a.steps,
            "decoded_bytes": decoded, "runs": runs,
            "rss_anon_saved_bytes": runs["memory"]["rss_anon_max_bytes"] -
            runs["disk"]["rss_anon_max_bytes"],
            "step_rate_ratio": runs["disk"]["steps_per_s"] / runs["memory"]["steps_per_s"]},
            indent=2))
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
