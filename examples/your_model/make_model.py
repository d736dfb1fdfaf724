"""Your own model and data for troupe: a small ResNet-style CNN with BatchNorm, and Fashion-MNIST
as tensor files.

  /usr/bin/python3 make_model.py [OUT_DIR] [--fashion DIR]

Writes into OUT_DIR (default: the current folder)
  net.pt    the network, scripted (torch.jit.script) with its initial weights
  train.pt  {"x": uint8 [60000, 1, 28, 28], "y": int64 [60000]}   (torch.save)
  test.pt   {"x": uint8 [10000, 1, 28, 28], "y": int64 [10000]}
troupe divides uint8 inputs by 255 (data.type "tensors"); use_model.py does the same.
Then, from OUT_DIR:  troupe run PATH/TO/examples/your_model/job.json --out run
"""
import argparse
import gzip
import os

import numpy as np
import torch
from torch import nn


class Block(nn.Module):
    """A residual block: conv-BN-relu-conv-BN, plus its input, relu."""

    def __init__(self, channels):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(channels)
        self.conv2 = nn.Conv2d(channels, channels, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(channels)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


def resnet(channels=16, classes=10):
    """A stem, then two residual blocks each followed by a 2x2 pool, then a linear classifier."""
    return nn.Sequential(
        nn.Conv2d(1, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels), nn.ReLU(),
        Block(channels), nn.MaxPool2d(2), Block(channels), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(channels * 7 * 7, classes))


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("out", nargs="?", default=".")
    p.add_argument("--fashion", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.manual_seed(0)
    torch.jit.script(resnet()).save(os.path.join(args.out, "net.pt"))
    for split, prefix in (("train", "train"), ("test", "t10k")):
        images = read_idx(f"{args.fashion}/{prefix}-images-idx3-ubyte.gz")
        labels = read_idx(f"{args.fashion}/{prefix}-labels-idx1-ubyte.gz")
        torch.save({"x": torch.from_numpy(images.copy()).unsqueeze(1),
                    "y": torch.from_numpy(labels.astype(np.int64))},
                   os.path.join(args.out, f"{split}.pt"))
    print(f"wrote net.pt, train.pt and test.pt in {args.out}")


if __name__ == "__main__":
    main()
