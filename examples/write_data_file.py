#!/usr/bin/python3
"""Writes a data set the way examples/own_data reads one: a {name: tensor} file of torch.save.

    /usr/bin/python3 examples/write_data_file.py data.pt && ./build/examples/own_data w.pt data.pt

Put your own arrays in place of the made-up ones: images float32 [N, 1, 28, 28] (or [N, 784]),
labels int64 in [0, classes). Made up here: three classes, each a bright stroke in its own
third of the image under noise.
"""
import sys

import torch


def make(rows, generator):
    labels = torch.randint(3, (rows,), generator=generator)
    images = torch.randn(rows, 1, 28, 28, generator=generator)
    for i, label in enumerate(labels.tolist()):
        images[i, 0, 4:24, 2 + 9 * label : 8 + 9 * label] += 0.25
    return images, labels


def main():
    generator = torch.Generator().manual_seed(5)
    train_images, train_labels = make(1200, generator)
    test_images, test_labels = make(300, generator)
    torch.save(
        {
            "train_images": train_images,
            "train_labels": train_labels,
            "test_images": test_images,
            "test_labels": test_labels,
        },
        sys.argv[1],
    )


if __name__ == "__main__":
    main()
