"""Checks a troupe run folder from PyTorch's side (tests only; never used by the product).

  check_weights.py RUN_DIR [--member K | --best] [--evaluate FASHION_MNIST_DIR]

Loads final_weights.pt (member_K.pt, or best_weights.pt with --best) with torch.load, builds the
same module tree in Python from the run's job.json (nn.Sequential of an OrderedDict with troupe's
layer names), loads the weights with strict=True (so every name and shape must match PyTorch's
state_dict); for a torchscript model it loads them, and final_model.pt's state_dict, strictly into
the module the job names, and evaluates final_model.pt itself. With --evaluate it recomputes the test accuracy on Fashion-MNIST and compares it
with summary.json; with --best also the best validation figure summary.json reports, on the
training rows validation_rows.json names.
Exit 0 when everything matches, 1 with a message otherwise.
"""
import collections
import gzip
import json
import sys

import numpy as np
import torch
from torch import nn


def activation(name):
    return {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}[name]()


def build(model):
    layers = collections.OrderedDict()
    if model["type"] == "mlp":
        layers["flatten"] = nn.Flatten()
        features = 28 * 28
    else:
        channels, side, k = 1, 28, model["kernel_size"]
        for i, out in enumerate(model["channels"], 1):
            layers[f"conv{i}"] = nn.Conv2d(channels, out, k, padding=k // 2)
            layers[f"cact{i}"] = activation(model["activation"])
            layers[f"pool{i}"] = nn.MaxPool2d(2)
            channels, side = out, side // 2
        layers["flatten"] = nn.Flatten()
        features = channels * side * side
    for i, width in enumerate(model["hidden"], 1):
        layers[f"fc{i}"] = nn.Linear(features, width)
        layers[f"act{i}"] = activation(model["activation"])
        features = width
    layers["out"] = nn.Linear(features, 10)
    return nn.Sequential(layers)


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


# The run states its preprocessing in job.json and summary.json; the evaluation uses what it
# states (set in main), so a wrong statement shows up as lost accuracy.
PREPROCESSING = {"scale": 1 / 255.0, "mean": 0.2860, "std": 0.3530}


def normalized(images):
    p = PREPROCESSING
    x = (torch.from_numpy(images.astype(np.float32)) * p["scale"] - p["mean"]) / p["std"]
    return x.unsqueeze(1)


def script_model(run, job, weights):
    """final_model.pt, after checking that it and final_weights.pt load into the user's module."""
    source = torch.jit.load(job["model"]["path"])
    source.load_state_dict(weights, strict=True)
    trained = torch.jit.load(f"{run}/final_model.pt")
    state = trained.state_dict()
    source.load_state_dict(state, strict=True)
    for name, value in state.items():
        if not torch.equal(value.float(), weights[name].float()):
            sys.exit(f"final_model.pt and final_weights.pt differ at {name}")
    print(f"final_model.pt: {len(state)} tensors, equal to final_weights.pt, load strictly")
    trained.eval()
    return trained


def forward_in_chunks(model, x):
    """The model's outputs for every row of x, 250 rows at a time: Debian's PyTorch took 8.7 s
    for one forward of the BatchNorm CNN over 10,000 images at once, 0.6 s in chunks of 250."""
    return torch.cat([model(chunk) for chunk in x.split(250)])


def check_best_validation(model, run, folder, summary):
    """The best evaluation's figure, recomputed on the rows troupe held out."""
    split = json.load(open(f"{run}/validation_rows.json"))
    rows = torch.tensor(split["indices"])
    images = read_idx(f"{folder}/train-images-idx3-ubyte.gz")
    labels = torch.from_numpy(read_idx(f"{folder}/train-labels-idx1-ubyte.gz").astype(np.int64))
    if split["training_rows"] != len(labels):
        sys.exit(f"validation_rows.json splits {split['training_rows']} rows, the file has {len(labels)}")
    with torch.no_grad():
        logits = forward_in_chunks(model, normalized(images[rows.numpy()]))
    figures = {
        "validation_loss": nn.functional.cross_entropy(logits, labels[rows]).item(),
        "validation_accuracy": (logits.argmax(1) == labels[rows]).float().mean().item(),
    }
    best = summary["best"]
    mine = figures[best["metric"]]
    print(f"best {best['metric']} in PyTorch {mine:.6f}, troupe reported {best['value']:.6f}")
    if abs(mine - best["value"]) > 1e-4:
        sys.exit("best validation figures differ")


def main():
    args = sys.argv[1:]
    run = args.pop(0)
    # --member K checks a stacked ensemble's member_K.pt against that member's figures.
    member = None
    best = False
    if len(args) >= 2 and args[0] == "--member":
        member = int(args[1])
        args = args[2:]
    if args and args[0] == "--best":
        best = True
        args = args[1:]
    file = ("best_weights.pt" if best else
            "final_weights.pt" if member is None else f"member_{member}.pt")
    job = json.load(open(f"{run}/job.json"))
    summary = json.load(open(f"{run}/summary.json"))
    if job["data"]["type"] == "fashion_mnist":
        stated = job["data"]["preprocessing"]
        assert stated == summary["preprocessing"], (stated, summary["preprocessing"])
        PREPROCESSING.update({k: stated[k] for k in ("scale", "mean", "std")})
    # weights_only: what PyTorch 2.6 and later do by default; a tagged dict failed there.
    weights = torch.load(f"{run}/{file}", weights_only=True)
    if not isinstance(weights, dict):
        sys.exit(f"{file} holds a {type(weights).__name__}, not a dict")
    if job["model"]["type"] == "torchscript":
        model = script_model(run, job, weights)
    else:
        model = build(job["model"])
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in weights.items()}
    if expected != got:
        sys.exit(f"names/shapes differ:\n expected {expected}\n got      {got}")
    model.load_state_dict(weights, strict=True)
    print(f"{len(weights)} tensors load strictly into the PyTorch module tree")
    if len(args) >= 2 and args[0] == "--evaluate":
        folder = args[1]
        images = read_idx(f"{folder}/t10k-images-idx3-ubyte.gz")
        labels = read_idx(f"{folder}/t10k-labels-idx1-ubyte.gz").astype(np.int64)
        with torch.no_grad():
            predictions = forward_in_chunks(model, normalized(images)).argmax(1)
        accuracy = (predictions == torch.from_numpy(labels)).float().mean().item()
        reported = (summary["test_accuracy"] if member is None
                    else summary["members"][member]["test_accuracy"])
        print(f"accuracy in PyTorch {accuracy:.4f}, troupe reported {reported:.4f}")
        if abs(accuracy - reported) > 1e-3:
            sys.exit("accuracies differ")
        if best:
            check_best_validation(model, run, folder, summary)


if __name__ == "__main__":
    main()
