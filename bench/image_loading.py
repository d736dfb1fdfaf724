"""Decoded + augmented images per second: troupe's image loader against torchvision's
ImageFolder + DataLoader, side by side on the same folders and transforms (issue 40, figure 2).

  /usr/bin/python3 bench/image_loading.py [--build build] [--workers N] [--keep DIR]

Makes two folders from Fashion-MNIST (deleted after unless --keep): 60,000 28x28 gray PNGs and
5,000 224x224 RGB JPEGs (each image upscaled, its channels mixed), a folder per class. On each:
  troupe       build/bench/image_loading_bench: every image decoded and brought to size by
               troupe's loader (every core), then one epoch of batches gathered with a random
               crop (padding 2 / 4), a horizontal flip and per-channel normalization
  torchvision  ImageFolder + DataLoader(num_workers=--workers, default the core count, batch
               256, shuffled) with Grayscale/RGB, RandomCrop(size, padding), RandomHorizontal-
               Flip, ToTensor, Normalize: one epoch
Prints JSON: per folder each side's images/s over a first epoch (troupe's decode counted in
it), troupe's later-epoch rate (its decoded images are kept), and the ratio troupe/torchvision
(target >= 1.5). Needs python3-torchvision and python3-pil.
"""
import argparse
import gzip
import json
import os
import shutil
import subprocess
import tempfile
import time

import numpy as np

FASHION = "/usr/share/datasets/fashion-mnist"


def fashion():
    with gzip.open(os.path.join(FASHION, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(os.path.join(FASHION, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    return x, y


def make_folder(root, x, y, kind):
    from PIL import Image
    for i, (image, label) in enumerate(zip(x, y)):
        folder = os.path.join(root, f"class_{label}")
        os.makedirs(folder, exist_ok=True)
        if kind == "png":
            Image.fromarray(image, "L").save(os.path.join(folder, f"{i:05d}.png"))
        else:
            rgb = np.stack([image, image // 2, 255 - image], axis=-1)
            Image.fromarray(rgb, "RGB").resize((224, 224), Image.BILINEAR).save(
                os.path.join(folder, f"{i:05d}.jpg"), quality=90)


def troupe_side(bench, root, size, channels, padding):
    out = subprocess.run([bench, "--folder", root, "--size", str(size), str(size),
                          "--channels", str(channels), "--padding", str(padding)],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def torchvision_side(root, size, channels, padding, workers):
    import torch
    from torchvision import datasets, transforms
    torch.set_num_threads(1)
    mean, std = [0.5] * channels, [0.25] * channels
    transform = transforms.Compose([
        transforms.Grayscale(channels),
        transforms.RandomCrop(size, padding=padding),
        transforms.RandomHorizontalFlip(),
        transforms.ToTensor(),
        transforms.Normalize(mean, std)])
    data = datasets.ImageFolder(root, transform=transform)
    loader = torch.utils.data.DataLoader(data, batch_size=256, shuffle=True, num_workers=workers)
    start = time.monotonic()
    images = 0
    for x, _ in loader:
        images += x.shape[0]
    seconds = time.monotonic() - start
    return {"images": images, "seconds": seconds, "images_per_s": images / seconds}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--workers", type=int, default=os.cpu_count())
    p.add_argument("--keep", help="a folder to keep the image folders in")
    a = p.parse_args()
    bench = os.path.abspath(os.path.join(a.build, "bench", "image_loading_bench"))
    folder = a.keep or tempfile.mkdtemp(prefix="troupe-image-bench-")
    try:
        x, y = fashion()
        cases = {"png_28x28_gray": ("png", x, y, 28, 1, 2),
                 "jpeg_224x224_rgb": ("jpg", x[:5000], y[:5000], 224, 3, 4)}
        result = {"workers": a.workers}
        for name, (kind, cx, cy, size, channels, padding) in cases.items():
            root = os.path.join(folder, name)
            if not os.path.isdir(root):
                make_folder(root, cx, cy, kind)
            ours = troupe_side(bench, root, size, channels, padding)
            theirs = torchvision_side(root, size, channels, padding, a.workers)
            result[name] = {"troupe": ours, "torchvision": theirs,
                            "ratio_first_epoch": round(ours["images_per_s"]
                                                       / theirs["images_per_s"], 2),
                            "ratio_later_epochs": round(ours["later_epoch_images_per_s"]
                                                        / theirs["images_per_s"], 2)}
        print(json.dumps(result, indent=2))
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
