"""Trains from a NumPy training set larger than this machine's memory budget for the process,
memory-mapped, side by side with the same job on an in-memory tensor file (issue 40, figure 1).

  /usr/bin/python3 bench/npy_memory.py [--build build] [--gb 8] [--reference-gb 1]
      [--steps 4000] [--repeats 3] [--keep DIR]

Writes (then deletes) a float32 [N, 784] .npy training set of --gb gigabytes and a float32
tensor file of --reference-gb (torch.save, read whole into memory), both Fashion-MNIST images
repeated with a little noise, and trains the same job on each: an MLP, 2 sync replicas of one
thread, batch 256, --steps steps, the two alternating --repeats times (a single pair, the
memory-mapped run first, measured from 0.73x to 0.97x: one variant's run warms or cools what
the next finds). While each runs, the troupe process's anonymous memory (RssAnon in
/proc/PID/status: the heap, not the page cache a memory map reads through) is sampled every
50 ms.

Prints JSON: per variant the data's bytes, the largest RssAnon, the training steps per second
of each repeat (from metrics.jsonl's step records after the first 10%, so start-up does not
count) and their median, and
  rss_anon_max_gb_npy        (target <= 1)
  step_rate_ratio            the medians' ratio, npy over the in-memory file (target >= 0.95)
  step_rate_ratios           each repeat's ratio
"""
import statistics
import argparse
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import numpy as np

FASHION = "/usr/share/datasets/fashion-mnist"
ROW = 784


def fashion_rows():
    with gzip.open(os.path.join(FASHION, "train-images-idx3-ubyte.gz")) as f:
        x = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, ROW)
    with gzip.open(os.path.join(FASHION, "train-labels-idx1-ubyte.gz")) as f:
        y = np.frombuffer(f.read(), dtype=np.uint8, offset=8).astype(np.int64)
    return (x.astype(np.float32) / 255 - 0.286) / 0.353, y


def chunks(rows, x, y, chunk=60000):
    """Fashion-MNIST repeated to `rows` rows, a little noise so no two copies are equal."""
    rng = np.random.default_rng(0)
    for begin in range(0, rows, chunk):
        n = min(chunk, rows - begin)
        take = np.arange(begin, begin + n) % len(x)
        yield begin, x[take] + rng.normal(0, 0.05, (n, ROW)).astype(np.float32), y[take]


def write_npy(folder, gb, x, y):
    """Writes x.npy as numpy.save would, header then rows with write() (not through a memory
    map, whose page cache the kernel keeps in 4 kB pages: written so, the same 8 GB trained
    0.92x; written like this, the cache holds large folios the map can use as 2 MB pages)."""
    rows = int(gb * 2**30) // (ROW * 4)
    ys = np.empty(rows, dtype=np.int64)
    with open(os.path.join(folder, "x.npy"), "wb") as f:
        np.lib.format.write_array_header_1_0(
            f, {"descr": np.lib.format.dtype_to_descr(np.dtype(np.float32)),
                "fortran_order": False, "shape": (rows, ROW)})
        for begin, cx, cy in chunks(rows, x, y):
            f.write(np.ascontiguousarray(cx).data)
            ys[begin:begin + len(cy)] = cy
    np.save(os.path.join(folder, "y.npy"), ys)
    return rows


def write_tensor_file(folder, gb, x, y):
    import torch
    rows = int(gb * 2**30) // (ROW * 4)
    xs = np.empty((rows, ROW), dtype=np.float32)
    ys = np.empty(rows, dtype=np.int64)
    for begin, cx, cy in chunks(rows, x, y):
        xs[begin:begin + len(cx)] = cx
        ys[begin:begin + len(cy)] = cy
    torch.save({"x": torch.from_numpy(xs), "y": torch.from_numpy(ys)},
               os.path.join(folder, "train.pt"))
    return rows


def rss_anon(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def run_sampled(command, preexec_fn=None):
    """Runs command (its output dropped, its stderr kept), sampling its RssAnon every 50 ms:
    (exit status, stderr text, the largest RssAnon in bytes)."""
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             preexec_fn=preexec_fn)
    peak = [0]

    def sample():
        while child.poll() is None:
            peak[0] = max(peak[0], rss_anon(child.pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    _, err = child.communicate()
    sampler.join()
    return child.returncode, err.decode(), peak[0]


def steps_per_second(metrics):
    records = [json.loads(line) for line in open(metrics)]
    steps = [r for r in records if r.get("event") == "step"]
    # A thinned file's window records stand for several steps each: counted as one, the rate
    # came out a fraction of the true one, by another fraction for each variant.
    if any("steps" in r for r in steps):
        sys.exit(f"{metrics}: thinned (window records of several steps): run fewer steps")
    times = [r["t"] for r in steps]
    if len(times) < 20:
        sys.exit(f"{metrics}: too few step records")
    skip = len(times) // 10
    return (len(times) - 1 - skip) / (times[-1] - times[skip])


def train(troupe, folder, name, data, steps):
    job = {"name": name, "seed": 1, "model": {"type": "mlp", "hidden": [256]}, "data": data,
           "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
           "training": {"steps": steps, "batch_size": 256, "eval_interval": steps},
           "parallelism": {"policy": "sync", "replicas": 2, "threads_per_replica": 1}}
    path = os.path.join(folder, name + ".json")
    json.dump(job, open(path, "w"))
    out = os.path.join(folder, name)
    status, err, peak = run_sampled([troupe, "run", path, "--out", out, "--quiet", "--force"])
    if status != 0:
        sys.exit(f"{name}: troupe failed: {err}")
    return {"rss_anon_max_bytes": peak, "steps_per_s": steps_per_second(
        os.path.join(out, "metrics.jsonl"))}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--build", default="build")
    p.add_argument("--gb", type=float, default=8)
    p.add_argument("--reference-gb", type=float, default=1)
    p.add_argument("--steps", type=int, default=4000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--keep", help="a folder to keep the files and runs in (else a temporary one)")
    a = p.parse_args()
    troupe = os.path.abspath(os.path.join(a.build, "apps", "troupe"))
    folder = a.keep or tempfile.mkdtemp(prefix="troupe-npy-bench-")
    os.makedirs(folder, exist_ok=True)
    try:
        x, y = fashion_rows()
        test_x = os.path.join(folder, "x_test.npy")
        test_y = os.path.join(folder, "y_test.npy")
        np.save(test_x, x[:2000])
        np.save(test_y, y[:2000])
        started = time.monotonic()
        rows = write_npy(folder, a.gb, x, y)
        write_s = time.monotonic() - started
        ref_rows = write_tensor_file(folder, a.reference_gb, x, y)
        torch_test = os.path.join(folder, "test.pt")
        import torch
        torch.save({"x": torch.from_numpy(x[:2000].copy()), "y": torch.from_numpy(y[:2000])},
                   torch_test)
        # The files just written are gigabytes of dirty pages: flushed now, the kernel's
        # writeback does not share the 2 cores with the first run's training.
        os.sync()
        data = {"npy": {"type": "npy", "train": {"x": os.path.join(folder, "x.npy"),
                                                 "y": os.path.join(folder, "y.npy")},
                        "test": {"x": test_x, "y": test_y}},
                "in_memory": {"type": "tensors", "train": os.path.join(folder, "train.pt"),
                              "test": torch_test}}
        runs = {name: [] for name in data}
        for _ in range(a.repeats):
            for name in data:
                runs[name].append(train(troupe, folder, name, data[name], a.steps))

        def summary(name, **facts):
            rates = [r["steps_per_s"] for r in runs[name]]
            return dict(facts, rss_anon_max_bytes=max(r["rss_anon_max_bytes"] for r in runs[name]),
                        steps_per_s=[round(r, 1) for r in rates],
                        steps_per_s_median=round(statistics.median(rates), 1))

        npy = summary("npy", rows=rows, bytes=rows * ROW * 4, write_s=round(write_s, 1))
        ref = summary("in_memory", rows=ref_rows, bytes=ref_rows * ROW * 4)
        print(json.dumps({
            "npy_memory_mapped": npy, "tensor_file_in_memory": ref,
            "rss_anon_max_gb_npy": round(npy["rss_anon_max_bytes"] / 2**30, 3),
            "step_rate_ratio": round(npy["steps_per_s_median"] / ref["steps_per_s_median"], 3),
            "step_rate_ratios": [round(n["steps_per_s"] / r["steps_per_s"], 3)
                                 for n, r in zip(runs["npy"], runs["in_memory"])],
            "machine_memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
                                       / 2**30, 1)}, indent=2))
    finally:
        if not a.keep:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
