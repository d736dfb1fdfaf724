#!/usr/bin/python3
"""Writes the files tests/e2e/hostile_inputs_test.sh feeds troupe, each made the way a hostile or
careless user would (issue 39): TorchScript models whose weight's storage declares more than its
archive stores, a model using a custom operator, a tensor file whose deflated record inflates far
past what its tensors use, a tensor file of 0 rows, and CSV tables with a value beyond float32
and a header of 10^6 columns.  make_hostile_files.py OUT_DIR
"""
import os
import re
import struct
import sys
import zipfile

import torch

out = sys.argv[1]


def path(name):
    return os.path.join(out, name)


def rewrite(src, dst, edit):
    """Copies the zip archive `src` to `dst`, each record through edit(name, bytes) -> bytes
    (or None: written by write_record(zout, name) instead)."""
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w") as zout:
        for item in zin.infolist():
            data = edit(item.filename, zin.read(item.filename), zout)
            if data is not None:
                zout.writestr(item, data)


def first_storage_numel(pickle, numel):
    """The pickle with its first storage's element count (after BINUNICODE 'cpu' and BINPUT)
    replaced by `numel` (LONG1, 8 bytes)."""
    m = re.search(rb"X\x03\x00\x00\x00cpuq.(M..|K.|J....)t(q.)?Q", pickle, re.S)
    assert m, "no storage reference found"
    return pickle[: m.start(1)] + b"\x8a\x08" + struct.pack("<q", numel) + pickle[m.end(1):]


# A scripted Flatten + Linear(784, 10): the weight is storage 0, 7840 floats.
torch.jit.script(torch.nn.Sequential(torch.nn.Flatten(), torch.nn.Linear(784, 10))).save(
    path("linear.pt"))


def over_declared(name, numel, rows=None):
    def edit(record, data, zout):
        if record.endswith("/data.pkl"):
            data = first_storage_numel(data, numel)
            if rows:  # the weight's size (10, 784) -> (rows, 784): inside the declared storage
                data = data.replace(b"(K\nM\x10\x03t", b"(J" + struct.pack("<i", rows) + b"M\x10\x03t",
                                    1)
        return data
    rewrite(path("linear.pt"), path(name), edit)


over_declared("over_1e8.pt", 10**8, 5_000_000 // 40)  # SIGSEGV in flat_parameters at validate
over_declared("over_1e10.pt", 10**10)  # an uncaught c10::Error
over_declared("inside_over.pt", 10**6, 1000)  # trained, then SIGSEGV writing final_model.pt

# A custom operator registered in Python: LibTorch in C++ does not have it.
library = torch.library.Library("probe", "DEF")
library.define("myop(Tensor x) -> Tensor")
library.impl("myop", lambda x: x * 2, "CPU")


class CustomOp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(784, 10)

    def forward(self, x):
        return torch.ops.probe.myop(self.fc(x.flatten(1)))


torch.jit.script(CustomOp()).save(path("custom_op.pt"))

# Tensor files: a good small one, one of 0 rows, and a deflation bomb whose x storage declares
# 95 x 2^20 floats (398 MB), stored as that many deflated zeros (0.4 MB on disk), under an x of
# 10 rows.
x, y = torch.rand(10, 784), torch.arange(10) % 10
torch.save({"x": x, "y": y}, path("small.pt"))
torch.save({"x": torch.zeros(0, 784), "y": torch.zeros(0, dtype=torch.long)}, path("empty.pt"))
bomb_chunks = 95
bomb_numel = bomb_chunks * (1 << 22) // 4


def bomb(record, data, zout):
    if record.endswith("/data.pkl"):
        return first_storage_numel(data, bomb_numel)
    if record.endswith("/data/0"):
        info = zipfile.ZipInfo(record)
        info.compress_type = zipfile.ZIP_DEFLATED
        with zout.open(info, "w", force_zip64=True) as f:
            zeros = bytes(1 << 22)
            for _ in range(bomb_chunks):
                f.write(zeros)
        return None
    return data


rewrite(path("small.pt"), path("bomb.pt"), bomb)

# CSV tables.
with open(path("table.csv"), "w") as f:
    f.write("a,b,label\n")
    for i in range(40):
        f.write(f"{i * 0.1},{i % 3},{i % 2}\n")
with open(path("beyond_float.csv"), "w") as f:
    f.write("a,b,label\n0.5,1,0\n0.25,1e39,1\n")
for name, columns in (("wide_train.csv", 1_000_000), ("wide_test.csv", 1_000_000)):
    with open(path(name), "w") as f:
        other = "z" if name.startswith("wide_test") else "c"
        f.write(",".join(f"{other}{i}" for i in range(columns)) + ",label\n")
        f.write(",".join("0" for _ in range(columns)) + ",1\n")
        f.write(",".join("1" for _ in range(columns)) + ",0\n")
