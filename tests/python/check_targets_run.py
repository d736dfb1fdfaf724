"""Re-evaluates a troupe run on tensor or CSV data in PyTorch (tests only).

  check_targets_run.py RUN_DIR [TOLERANCE]

Reads the run's job.json for its data files, loss and model; loads final_weights.pt strictly into
the same module tree built in Python (the built-in mlp, for rows of any shape) or, for a
torchscript model, final_model.pt; computes on the test file the loss and the metric troupe
defines for training.loss (cross_entropy: accuracy; mse: mse; l1: mae; bce_with_logits: the
share of labels right at 0.5) and compares them with summary.json's test figures. Exit 0 when
both agree within TOLERANCE (relative to the figure, default 1e-5), else 1 with the figures.
"""
import collections
import csv
import json
import sys

import torch
from torch import nn
from torch.nn import functional as F

METRIC = {"cross_entropy": "accuracy", "mse": "mse", "l1": "mae", "bce_with_logits": "accuracy"}


def read_table(path, label, class_labels):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    column = header.index(label)
    x = torch.tensor([[float(v) for i, v in enumerate(r) if i != column] for r in body])
    y = torch.tensor([float(r[column]) for r in body])
    return x, (y.long() if class_labels else y)


def read_tensors(path):
    d = torch.load(path)
    x = d["x"]
    x = x.float() / 255 if x.dtype == torch.uint8 else x
    return x, d["y"]


def activation(name):
    return {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}[name]()


def builtin_mlp(model, features, outputs):
    layers = collections.OrderedDict([("flatten", nn.Flatten())])
    for i, width in enumerate(model["hidden"], 1):
        layers[f"fc{i}"] = nn.Linear(features, width)
        layers[f"act{i}"] = activation(model["activation"])
        features = width
    layers["out"] = nn.Linear(features, outputs)
    return nn.Sequential(layers)


def figures(loss, out, y):
    """Mean loss per row and the metric per row, as troupe computes them."""
    if loss == "cross_entropy":
        return F.cross_entropy(out, y).item(), (out.argmax(1) == y).float().mean().item()
    out = out.reshape(y.shape)
    if loss == "mse":
        value = F.mse_loss(out, y).item()
        return value, value
    if loss == "l1":
        value = F.l1_loss(out, y).item()
        return value, value
    value = F.binary_cross_entropy_with_logits(out, y).item()
    return value, ((out > 0) == (y > 0.5)).float().mean().item()


def main():
    run = sys.argv[1]
    tolerance = float(sys.argv[2]) if len(sys.argv) > 2 else 1e-5
    job = json.load(open(f"{run}/job.json"))
    summary = json.load(open(f"{run}/summary.json"))
    loss = job["training"]["loss"]
    data = job["data"]
    if data["type"] == "csv":
        x, y = read_table(data["test"], data["label"], loss == "cross_entropy")
    else:
        x, y = read_tensors(data["test"])
    weights = torch.load(f"{run}/final_weights.pt")
    if job["model"]["type"] == "torchscript":
        model = torch.jit.load(f"{run}/final_model.pt")
    else:
        model = builtin_mlp(job["model"], x[0].numel(), weights["out.bias"].numel())
        model.load_state_dict(weights, strict=True)
    model.eval()
    with torch.no_grad():
        mine_loss, mine_metric = figures(loss, model(x), y)
    metric = METRIC[loss]
    theirs_loss, theirs_metric = summary["test_loss"], summary[f"test_{metric}"]
    print(f"PyTorch: test loss {mine_loss:.6g}, test {metric} {mine_metric:.6g}; "
          f"troupe: {theirs_loss:.6g}, {theirs_metric:.6g}")
    for mine, theirs in ((mine_loss, theirs_loss), (mine_metric, theirs_metric)):
        if abs(mine - theirs) > tolerance * max(1.0, abs(theirs)):
            sys.exit("the figures differ")


main()
