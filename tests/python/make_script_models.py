"""Writes TorchScript models for the torchscript tests (tests only).

  make_script_models.py OUT_DIR SEED

OUT_DIR/mlp.pt      the built-in MLP (784-256-128-10, relu) as nn.Sequential with the same
                    parameter names, initialized under SEED exactly as troupe initializes its own
OUT_DIR/cnn.pt      the built-in CNN (channels [4], kernel 3, no hidden layer) as nn.Sequential,
                    its pool's kernel given as a tuple
OUT_DIR/bn_cnn.pt   a small CNN with BatchNorm (an nn.Sequential: stages can be cut by child)
OUT_DIR/dropout.pt  an MLP with dropout (runs are not bit-for-bit reproducible)
OUT_DIR/resnet.pt   a module that is not an nn.Sequential (a residual block)
OUT_DIR/tabular.pt  an MLP over 20 features, 3 classes, and its data tab_train.pt, tab_test.pt
OUT_DIR/scaled.pt   a Linear times a parameter of the module's own (model.init "seed" refuses it)
OUT_DIR/fake_linear.pt  a module named Linear with a 1-d weight (model.init "seed" refuses it)
OUT_DIR/tied.pt     one Linear used twice in an nn.Sequential (tied weights: refused)
and one bad file per refusal the tests check.
"""
import collections
import os
import sys

import torch
from torch import nn

out, seed = sys.argv[1], int(sys.argv[2])


def save(module, name):
    torch.jit.script(module).save(os.path.join(out, name))


def mlp():
    return nn.Sequential(collections.OrderedDict([
        ("flatten", nn.Flatten()),
        ("fc1", nn.Linear(784, 256)), ("act1", nn.ReLU()),
        ("fc2", nn.Linear(256, 128)), ("act2", nn.ReLU()),
        ("out", nn.Linear(128, 10))]))


def bn_cnn():
    return nn.Sequential(collections.OrderedDict([
        ("conv1", nn.Conv2d(1, 8, 3, padding=1)), ("bn1", nn.BatchNorm2d(8)),
        ("relu1", nn.ReLU()), ("pool1", nn.MaxPool2d(2)),
        ("conv2", nn.Conv2d(8, 16, 3, padding=1)), ("bn2", nn.BatchNorm2d(16)),
        ("relu2", nn.ReLU()), ("pool2", nn.MaxPool2d(2)),
        ("flatten", nn.Flatten()), ("out", nn.Linear(16 * 7 * 7, 10))]))


class Residual(nn.Module):
    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(1, 8, 3, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.body = nn.Conv2d(8, 8, 3, padding=1)
        self.head = nn.Linear(8 * 14 * 14, 10)

    def forward(self, x):
        x = torch.relu(self.bn(self.stem(x)))
        x = torch.max_pool2d(x + torch.relu(self.body(x)), 2)
        return self.head(torch.flatten(x, 1))


torch.manual_seed(seed)
save(mlp(), "mlp.pt")
torch.manual_seed(seed)
save(bn_cnn(), "bn_cnn.pt")
save(nn.Sequential(collections.OrderedDict([
    ("conv1", nn.Conv2d(1, 4, 3, padding=1)), ("cact1", nn.ReLU()),
    ("pool1", nn.MaxPool2d((2, 2))), ("flatten", nn.Flatten()),
    ("out", nn.Linear(4 * 14 * 14, 10))])), "cnn.pt")
torch.manual_seed(seed)
save(nn.Sequential(nn.Flatten(), nn.Linear(784, 64), nn.ReLU(), nn.Dropout(0.2),
                   nn.Linear(64, 10)), "dropout.pt")
torch.manual_seed(seed)
save(Residual(), "resnet.pt")

# Tabular data (20 features, 3 classes: which of three random directions a row leans to most)
# and a model for it.
directions = torch.randn(3, 20)
for name, rows in (("tab_train.pt", 2000), ("tab_test.pt", 500)):
    x = torch.randn(rows, 20)
    torch.save({"x": x, "y": (x @ directions.T).argmax(1)}, os.path.join(out, name))
torch.manual_seed(seed)
save(nn.Sequential(nn.Linear(20, 32), nn.ReLU(), nn.Linear(32, 3)), "tabular.pt")

# Refusals.
class Scaled(nn.Module):  # a parameter of its own, with no PyTorch rule to draw it by
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(784, 10)
        self.scale = nn.Parameter(torch.ones(10))

    def forward(self, x):
        return self.fc(torch.flatten(x, 1)) * self.scale


save(Scaled(), "scaled.pt")


class Linear(nn.Module):  # shares nn.Linear's name, not its tensors
    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(10))

    def forward(self, x):
        return torch.flatten(x, 1)[:, :10] * self.weight


save(Linear(), "fake_linear.pt")
torch.manual_seed(seed)
save(nn.Sequential(nn.Flatten(), nn.Linear(784, 5)), "five_outputs.pt")
save(nn.Sequential(nn.Flatten(), nn.Linear(100, 10)), "wrong_input.pt")
save(nn.Sequential(nn.Flatten(), nn.Linear(784, 10)).double(), "double.pt")
shared = nn.Linear(16, 16)
save(nn.Sequential(nn.Flatten(), nn.Linear(784, 16), nn.Tanh(), shared, nn.Tanh(), shared,
                   nn.Linear(16, 10)), "tied.pt")


class Cut(nn.Module):  # an output of the right shape that training cannot use
    def __init__(self, first_row_only):
        super().__init__()
        self.fc = nn.Linear(784, 10)
        self.first_row_only = first_row_only

    def forward(self, x):
        y = self.fc(x.flatten(1))
        return y[:1] if self.first_row_only else y.detach()


save(Cut(False), "detached.pt")
save(Cut(True), "first_row.pt")
frozen = nn.Sequential(nn.Flatten(), nn.Linear(784, 10))
frozen[1].bias.requires_grad_(False)
save(frozen, "frozen.pt")
torch.save(mlp().state_dict(), os.path.join(out, "state_dict.pt"))
with open(os.path.join(out, "random.pt"), "wb") as f:
    f.write(torch.randint(0, 256, (5000,), dtype=torch.uint8).numpy().tobytes())
with open(os.path.join(out, "mlp.pt"), "rb") as f:
    whole = f.read()
with open(os.path.join(out, "truncated.pt"), "wb") as f:
    f.write(whole[: len(whole) // 2])
