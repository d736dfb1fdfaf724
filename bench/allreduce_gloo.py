"""PyTorch's gloo all_reduce between processes on loopback: the reference of allreduce_bench.

  /usr/bin/python3 bench/allreduce_gloo.py --ranks 3 [--sizes-mb 1,16,128] [--iters 10]
                                           [--warmup 2]

Same measurement as bench/allreduce.cpp: per size a barrier, then one timed all_reduce of a
float32 tensor, warm-up rounds first, the median of rank 0. Prints one JSON object of the same
shape. Bench only: the product never uses Python.
"""
import argparse
import json
import os
import socket
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp


def rank_main(rank, args, port, queue):
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=args.ranks)
    results = []
    for mb in args.sizes_mb:
        numel = int(mb * (1 << 20) / 4)
        buffer = torch.empty(numel)
        times = []
        for i in range(args.warmup + args.iters):
            buffer.fill_(rank + 1)
            dist.barrier()
            start = time.perf_counter()
            dist.all_reduce(buffer)
            seconds = time.perf_counter() - start
            if i == 0 and not bool((buffer == args.ranks * (args.ranks + 1) / 2).all()):
                raise RuntimeError(f"wrong sum at {mb} MB")
            if i >= args.warmup:
                times.append(seconds)
        median = statistics.median(times)  # of an even count, the mean of the middle two
        nbytes = numel * 4
        results.append({"size_mb": mb, "median_s": median, "times_s": times,
                        "algbw_gbs": nbytes / median / 1e9,
                        "busbw_gbs": 2 * (args.ranks - 1) / args.ranks * nbytes / median / 1e9})
    dist.barrier()
    if rank == 0:
        queue.put({"ranks": args.ranks, "results": results})
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--sizes-mb", default="1,16,128")
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    args = p.parse_args()
    args.sizes_mb = [float(x) for x in args.sizes_mb.split(",")]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=rank_main, args=(r, args, port, queue)) for r in range(args.ranks)]
    for proc in procs:
        proc.start()
    report = queue.get(timeout=600)
    for proc in procs:
        proc.join()
    if any(proc.exitcode != 0 for proc in procs):
        sys.exit("allreduce_gloo: a rank failed")
    print(json.dumps(report))


if __name__ == "__main__":
    main()
