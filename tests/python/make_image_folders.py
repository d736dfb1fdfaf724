#!/usr/bin/python3
"""Writes the image folders tests/e2e/image_folder_test.sh feeds troupe, as a user keeps them
(torchvision's ImageFolder layout, written with PIL): a slice of Fashion-MNIST as 28x28 gray
PNGs (train/ and test/, a folder per class named by the class) and as 32x32 RGB JPEGs, plus the
bad cases: a corrupt image, an empty class folder, a test folder with other classes.
  make_image_folders.py FASHION_DIR OUT_DIR
"""
import gzip
import os
import shutil
import sys

import numpy as np
from PIL import Image

fashion, out = sys.argv[1], sys.argv[2]
NAMES = ["t_shirt", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag",
         "ankle_boot"]


def idx(name, offset):
    with gzip.open(os.path.join(fashion, name)) as f:
        return np.frombuffer(f.read(), dtype=np.uint8, offset=offset)


def write(folder, x, y, kind):
    for i, (image, label) in enumerate(zip(x, y)):
        path = os.path.join(out, folder, NAMES[label])
        os.makedirs(path, exist_ok=True)
        if kind == "png":
            Image.fromarray(image, "L").save(os.path.join(path, f"{i:05d}.png"))
        else:
            rgb = np.stack([image, image // 2, 255 - image], axis=-1)
            Image.fromarray(rgb, "RGB").resize((32, 32)).save(
                os.path.join(path, f"{i:05d}.jpg"), quality=90)


x_train = idx("train-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:3000]
y_train = idx("train-labels-idx1-ubyte.gz", 8)[:3000]
x_test = idx("t10k-images-idx3-ubyte.gz", 16).reshape(-1, 28, 28)[:1000]
y_test = idx("t10k-labels-idx1-ubyte.gz", 8)[:1000]
write("train", x_train, y_train, "png")
write("test", x_test, y_test, "png")
write("jpg_train", x_train[:1000], y_train[:1000], "jpg")
write("jpg_test", x_test[:300], y_test[:300], "jpg")

# The bad cases, each a copy of the test folder with one thing wrong.
shutil.copytree(os.path.join(out, "test"), os.path.join(out, "corrupt"))
with open(os.path.join(out, "corrupt", "bag", "broken.png"), "wb") as f:
    f.write(open(os.path.join(out, "test", "bag", os.listdir(os.path.join(out, "test", "bag"))[0]),
                 "rb").read()[:60])
shutil.copytree(os.path.join(out, "test"), os.path.join(out, "empty_class"))
os.makedirs(os.path.join(out, "empty_class", "zz_empty"))
shutil.copytree(os.path.join(out, "test"), os.path.join(out, "other_classes"))
shutil.rmtree(os.path.join(out, "other_classes", "bag"))
