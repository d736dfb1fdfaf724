"""One training step of a TorchScript model with BatchNorm, in troupe and in PyTorch (tests only).

  script_step.py make FASHION_MNIST_DIR OUT_DIR   writes OUT_DIR/step_train.pt and step_test.pt
                                                  (64 normalized rows each, [N, 1, 28, 28])
  script_step.py check MODEL RUN_DIR REPLICAS     exit 0 when the run's final_weights.pt equals
                                                  one plain SGD step (lr 1) of MODEL on every row
                                                  of step_train.pt, within 1e-6

With lr 1 and no momentum the step subtracts the gradient itself, so equal weights mean equal
gradients; the BatchNorm buffers (running mean, variance, batches tracked) are compared too.
BatchNorm's gradients depend on the order of the rows at the level of float rounding (1e-4 on
the first convolution), so the rows go through PyTorch in the order troupe's batch plan puts
them (core/data/batch_plan: a Fisher-Yates shuffle driven by std::mt19937_64, rebuilt here).
With REPLICAS 2 each half of the batch goes through its own copy of the model, as in troupe:
the gradient is the sum of the halves' (each scaled by its share of the batch) and the buffers
the share-weighted mean of the copies' buffers.
"""
import os
import sys

import numpy as np
import torch

from check_weights import read_idx


MASK = (1 << 64) - 1


def mt19937_64(seed):
    """std::mt19937_64, whose output the C++ standard fixes."""
    n, m = 312, 156
    state = [seed & MASK]
    for i in range(1, n):
        state.append((6364136223846793005 * (state[-1] ^ (state[-1] >> 62)) + i) & MASK)
    index = n
    while True:
        if index >= n:
            for i in range(n):
                x = (state[i] & 0xFFFFFFFF80000000) | (state[(i + 1) % n] & 0x7FFFFFFF)
                state[i] = state[(i + m) % n] ^ (x >> 1) ^ (0xB5026F5AA96619E9 if x & 1 else 0)
            index = 0
        y = state[index]
        index += 1
        y ^= (y >> 29) & 0x5555555555555555
        y ^= (y << 17) & 0x71D67FFFEDA60000
        y ^= (y << 37) & 0xFFF7EEE000000000
        y ^= y >> 43
        yield y & MASK


def permutation(n, seed):
    """core/data/batch_plan's permutation(n, seed)."""
    order = list(range(n))
    rng = mt19937_64(seed)
    for i in range(n - 1, 0, -1):
        bound = i + 1
        limit = MASK - MASK % bound
        r = next(rng)
        while r >= limit:
            r = next(rng)
        order[i], order[r % bound] = order[r % bound], order[i]
    return order


def make(folder, out):
    for split, first in (("step_train.pt", 0), ("step_test.pt", 64)):
        images = read_idx(f"{folder}/train-images-idx3-ubyte.gz")[first:first + 64]
        labels = read_idx(f"{folder}/train-labels-idx1-ubyte.gz")[first:first + 64]
        x = (torch.from_numpy(images.astype(np.float32)) / 255 - 0.2860) / 0.3530
        torch.save({"x": x.unsqueeze(1).contiguous(),
                    "y": torch.from_numpy(labels.astype(np.int64))},
                   os.path.join(out, split))


def check(model_file, run, replicas):
    data = torch.load(os.path.join(os.path.dirname(model_file), "step_train.pt"))
    rows = len(data["y"])
    # Job seed 1, epoch 0, as batch_plan seeds it.
    order = torch.tensor(permutation(rows, (1 * 0x9E3779B97F4A7C15 + 0) & MASK))
    copies, gradient, buffers = [], None, None
    for r in range(replicas):
        mine = order[r * rows // replicas:(r + 1) * rows // replicas]
        share = len(mine) / rows
        model = torch.jit.load(model_file)
        model.train()
        loss = torch.nn.functional.cross_entropy(model(data["x"][mine]), data["y"][mine])
        (loss * share if replicas > 1 else loss).backward()
        grads = [p.grad for p in model.parameters()]
        gradient = grads if gradient is None else [a + b for a, b in zip(gradient, grads)]
        mean = [b.float() * share for b in model.buffers()]
        buffers = mean if buffers is None else [a + b for a, b in zip(buffers, mean)]
        copies.append(model)
    model = copies[0]
    with torch.no_grad():
        for p, g in zip(model.parameters(), gradient):
            p -= g
        for b, value in zip(model.buffers(), buffers):
            b.copy_(value if b.is_floating_point() else value.round())
    expected = model.state_dict()
    got = torch.load(os.path.join(run, "final_weights.pt"))
    if expected.keys() != got.keys():
        sys.exit(f"names differ: {sorted(expected)} vs {sorted(got)}")
    worst = max((expected[k].double() - got[k].double()).abs().max().item() for k in expected)
    print(f"one step of {len(expected)} tensors: max abs difference from PyTorch {worst:.3g}")
    sys.exit(0 if worst <= 1e-6 else 1)


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2], sys.argv[3])
    else:
        check(sys.argv[2], sys.argv[3], int(sys.argv[4]))
