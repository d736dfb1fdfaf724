"""Reference for bench/sync_overhead.py: PyTorch DistributedDataParallel with gloo on this
machine, the same MLP (784-256-128-10), data, global batch and SGD as troupe's benchmark.
Bench only (Debian's python3-torch, run as /usr/bin/python3); the product never uses Python.

  /usr/bin/python3 bench/ddp_gloo.py --ranks 2 --threads 1 --steps 300 --warmup 30 --batch 128

Prints one JSON object (from rank 0): samples/s over the timed steps of the global batch.
"""
import argparse
import gzip
import json
import os
import socket
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank, args, port, queue):
    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=args.ranks)
    images = read_idx(f"{args.data}/train-images-idx3-ubyte.gz").astype(np.float32)
    labels = read_idx(f"{args.data}/train-labels-idx1-ubyte.gz").astype(np.int64)
    x = ((torch.from_numpy(images) / 255.0 - 0.2860) / 0.3530).unsqueeze(1)
    y = torch.from_numpy(labels)
    torch.manual_seed(1)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                          nn.ReLU(), nn.Linear(128, 10))
    ddp = nn.parallel.DistributedDataParallel(model)
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.05, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()
    generator = torch.Generator().manual_seed(1)
    order = torch.randperm(x.shape[0], generator=generator)
    local = args.batch // args.ranks
    steps_per_epoch = x.shape[0] // args.batch
    start = None
    for step in range(args.warmup + args.steps):
        if step == args.warmup:
            dist.barrier()
            start = time.perf_counter()
        first = (step % steps_per_epoch) * args.batch + rank * local
        index = order[first:first + local]
        optimizer.zero_grad()
        loss = loss_fn(ddp(x[index]), y[index])
        loss.backward()
        optimizer.step()
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        queue.put(args.steps * local * args.ranks / seconds)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    args = p.parse_args()
    ctx = mp.get_context("spawn")
    queue = ctx.SimpleQueue()
    mp.spawn(worker, args=(args, free_port(), queue), nprocs=args.ranks, join=True)
    print(json.dumps({"variant": "ddp_gloo", "replicas": args.ranks, "threads": args.threads,
                      "batch": args.batch, "steps": args.steps, "samples_per_s": queue.get()}))


if __name__ == "__main__":
    main()
