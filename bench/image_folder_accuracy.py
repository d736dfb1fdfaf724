"""A CNN trained from a folder of PNGs against the same CNN trained from the IDX files they were
made from (issue 40, figure 3): the accuracy should agree within a point, and the workers should
not wait for their data.

  /usr/bin/python3 bench/image_folder_accuracy.py [--build build] [--keep DIR]

Writes all of Fashion-MNIST as 28x28 gray PNGs (70,000 files, a folder per class; deleted after
unless --keep) and runs configs/fashion_cnn_sync.json (2 epochs, 2 sync replicas) as it is and
with data.type image_folder on the PNGs (the same normalization, no augmentation). Prints JSON:
each run's test accuracy, steps, samples/s, wall seconds and data_wait_s per worker, and the
accuracy difference in points (target: within 1).
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import tempfile

import numpy as np
from PIL import Image

FASHION = "/usr/share/datasets/fashion-mnist"
HERE = os.path.dirname(os.path.abspath(__file__))


def write_split(root, images, labels):
    x = np.frombuffer(gzip.open(os.path.join(FASHION, images)).read(), np.uint8, offset=16)
    y = np.frombuffer(gzip.open(os.path.join(FASHION, labels)).read(), np.uint8, offset=8)
    for i, (image, label) in enumerate(zip(x.reshape(-1, 28, 28), y)):
        folder = os.path.join(root, f"class_{label}")
        os.makedirs(folder, exist_ok=True)
        Image.fromarray(image, "L").save(os.path.join(folder, f"{i:05d}.png"))


def run(troupe, job, out, sets=()):
    cmd = [troupe, "run", job, "--out", out, "--quiet"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    s = json.load(open(os.path.join(out, "summary.json")))
    return {"test_accuracy": s["test_accuracy"], "steps": s["steps"],
            "samples_per_s": round(s["samples_per_s"]), "wall_s": round(s["wall_s"], 1),
            "data_wait_s": [round(w["data_wait_s"], 4) for w in s["workers"]]}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--keep", help="a folder to keep the PNGs and runs in")
    a = p.parse_args()
    troupe = os.path.abspath(os.path.join(a.build, "apps", "troupe"))
    job = os.path.join(HERE, "..", "configs", "fashion_cnn_sync.json")
    folder = a.keep or tempfile.mkdtemp(prefix="troupe-png-bench-")
    try:
        train, test = os.path.join(folder, "train"), os.path.join(folder, "test")
        if not os.path.isdir(train):
            write_split(train, "train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz")
            write_split(test, "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")
        idx = run(troupe, job, os.path.join(folder, "idx_run"))
        data = {"type": "image_folder", "train": train, "test": test,
                "image": {"size": [28, 28], "channels": 1, "mean": [0.2860], "std": [0.3530]}}
        png = run(troupe, job, os.path.join(folder, "png_run"), ["data=null",
                                                                  "data=" + json.dumps(data)])
        print(json.dumps({"idx_files": idx, "png_folder": png,
                          "accuracy_difference_points": round(
                              100 * (png["test_accuracy"] - idx["test_accuracy"]), 2)}, indent=2))
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
