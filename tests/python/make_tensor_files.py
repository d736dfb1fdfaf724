#!/usr/bin/python3
"""Writes the tensor data files tests/e2e/tensor_data_test.sh feeds troupe: good ones (a slice
of Fashion-MNIST as uint8 [N, 28, 28] and normalized float32 [N, 784]) and one bad file per
check troupe makes.  make_tensor_files.py FASHION_DIR OUT_DIR
"""
import gzip
import os
import sys
import zipfile

import numpy as np
import torch

fashion, out = sys.argv[1], sys.argv[2]


def idx(name, offset):
    with gzip.open(os.path.join(fashion, name)) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


x_train = torch.from_numpy(idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:3000].copy())
y_train = torch.from_numpy(idx("train-labels-idx1-ubyte.gz", 8)[:3000].astype(np.int64))
x_test = torch.from_numpy(idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:1000].copy())
y_test = torch.from_numpy(idx("t10k-labels-idx1-ubyte.gz", 8)[:1000].astype(np.int64))


def save(name, obj, **kwargs):
    torch.save(obj, os.path.join(out, name), **kwargs)


save("train.pt", {"x": x_train, "y": y_train})
save("test.pt", {"x": ((x_test.float() / 255 - 0.286) / 0.353).reshape(-1, 784), "y": y_test})
small_x, small_y = x_train[:10], y_train[:10]
save("wrong_keys.pt", {"x": small_x, "labels": small_y})
save("rows_differ.pt", {"x": small_x, "y": small_y[:9]})
save("double_x.pt", {"x": small_x.double(), "y": small_y})
save("float_y.pt", {"x": small_x, "y": small_y.float()})
save("int_y.pt", {"x": small_x, "y": small_y.int()})
save("shape.pt", {"x": torch.zeros(10, 3, 32, 32), "y": small_y})
nan_x = small_x.float()
nan_x[3, 5, 5] = float("nan")
save("nan.pt", {"x": nan_x, "y": small_y})
save("big_label.pt", {"x": small_x, "y": torch.full((10,), 12, dtype=torch.int64)})
save("legacy.pt", {"x": small_x, "y": small_y}, _use_new_zipfile_serialization=False)
with open(os.path.join(out, "random.pt"), "wb") as f:
    f.write(os.urandom(5000))
with open(os.path.join(out, "train.pt"), "rb") as f:
    whole = f.read()
with open(os.path.join(out, "truncated.pt"), "wb") as f:
    f.write(whole[: len(whole) // 2])
# A tensor whose stored bytes are fewer than its shape declares: the same archive with x's
# storage record cut to a tenth.
save("full.pt", {"x": small_x, "y": small_y})
with zipfile.ZipFile(os.path.join(out, "full.pt")) as src, \
        zipfile.ZipFile(os.path.join(out, "short_storage.pt"), "w") as dst:
    for item in src.infolist():
        data = src.read(item.filename)
        if item.filename.endswith("data/0") and len(data) > 100:
            data = data[: len(data) // 10]
        dst.writestr(item, data)
