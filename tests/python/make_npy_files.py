#!/usr/bin/python3
"""Writes the NumPy arrays tests/e2e/npy_data_test.sh feeds troupe, as a user would with
numpy.save: a slice of Fashion-MNIST (training x as uint8 [N, 28, 28] in two shards, test x as
float16 [N, 784], labels int64 and int32) and one bad file per check troupe makes.
  make_npy_files.py FASHION_DIR OUT_DIR
"""
import gzip
import os
import sys

import numpy as np

fashion, out = sys.argv[1], sys.argv[2]


def idx(name, offset):
    with gzip.open(os.path.join(fashion, name)) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def path(name):
    return os.path.join(out, name)


x_train = idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:3000]
y_train = idx("train-labels-idx1-ubyte.gz", 8)[:3000].astype(np.int64)
x_test = idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:1000]
y_test = idx("t10k-labels-idx1-ubyte.gz", 8)[:1000].astype(np.int32)

np.save(path("x0.npy"), x_train[:1700])  # shards cut where the user cut them
np.save(path("x1.npy"), x_train[1700:])
np.save(path("y.npy"), y_train)
np.save(path("x_test.npy"), (x_test.astype(np.float32) / 255).reshape(-1, 784).astype(np.float16))
np.save(path("y_test.npy"), y_test)

# Bad files, each refused naming the file and what is wrong.
small = x_train[:10].astype(np.float32) / 255
np.save(path("nan.npy"), np.where(np.arange(10)[:, None, None] == 3, np.nan, small).astype(np.float32))
np.save(path("y10.npy"), y_train[:10])
np.save(path("y9.npy"), y_train[:9])
np.save(path("negative_y.npy"), -y_train[:10] - 1)
np.save(path("y_2d.npy"), y_train[:10].reshape(10, 1))
np.save(path("double_x.npy"), small.astype(np.float64))
np.save(path("big_endian.npy"), small.astype(">f4"))
np.save(path("fortran.npy"), np.asfortranarray(small.reshape(10, 784)))
np.save(path("one_d.npy"), np.zeros(10, dtype=np.float32))
np.save(path("empty.npy"), np.zeros((0, 784), dtype=np.float32))
np.save(path("shape.npy"), np.zeros((10, 3, 32, 32), dtype=np.float32))
with open(path("x0.npy"), "rb") as f:
    whole = f.read()
with open(path("truncated.npy"), "wb") as f:
    f.write(whole[: len(whole) - 1000])
with open(path("longer.npy"), "wb") as f:  # its header says fewer rows than it holds
    f.write(whole + b"\0" * 784)
with open(path("random.npy"), "wb") as f:
    f.write(os.urandom(4096))
with open(path("header_cut.npy"), "wb") as f:
    f.write(whole[:40])
with open(path("object.npy"), "wb") as f:
    np.save(f, np.array([{"a": 1}] * 10, dtype=object), allow_pickle=True)
