"""A run's trained model as a PyTorch module (torch is imported only here, when asked for).

The built-in models are rebuilt as troupe builds them (model_builder.cpp): an nn.Sequential of
named layers whose state_dict keys are the names in final_weights.pt, each layer sized by the
weights themselves, so the rows the run trained on need not be known. A TorchScript model is
the run's final_model.pt, or the job's own module file with the weights asked for.
"""
import collections
import json
import numbers
import os


def _activation(nn, name):
    kinds = {"relu": nn.ReLU, "tanh": nn.Tanh, "gelu": nn.GELU}
    if name not in kinds:
        raise ValueError(f"an activation troupe does not build: {name!r}")
    return kinds[name]()


def _built_in(model, weights):
    from torch import nn
    layers = collections.OrderedDict()
    if model["type"] == "cnn":
        k = model["kernel_size"]
        i = 1
        while f"conv{i}.weight" in weights:
            out, channels = weights[f"conv{i}.weight"].shape[:2]
            layers[f"conv{i}"] = nn.Conv2d(channels, out, k, padding=k // 2)
            layers[f"cact{i}"] = _activation(nn, model["activation"])
            layers[f"pool{i}"] = nn.MaxPool2d(2)
            i += 1
    layers["flatten"] = nn.Flatten()
    i = 1
    while f"fc{i}.weight" in weights:
        out, features = weights[f"fc{i}.weight"].shape
        layers[f"fc{i}"] = nn.Linear(features, out)
        layers[f"act{i}"] = _activation(nn, model["activation"])
        i += 1
    out, features = weights["out.weight"].shape
    layers["out"] = nn.Linear(features, out)
    return nn.Sequential(layers)


def _weights_file(folder, weights):
    if weights == "final":
        return os.path.join(folder, "final_weights.pt")
    if weights == "best":
        return os.path.join(folder, "best_weights.pt")
    if isinstance(weights, numbers.Integral) and not isinstance(weights, bool):
        return os.path.join(folder, f"member_{weights}.pt")
    raise ValueError(f"weights is 'final', 'best' or a member's index, not {weights!r}")


def _read_weights(path):
    """The {name: tensor} dict of a weights file troupe wrote, read by troupe's checked reader:
    torch.load would unpickle whatever the file holds, code included, and run folders get
    copied from elsewhere."""
    import torch
    from . import _native
    state = collections.OrderedDict()
    for name, dtype, shape, raw in _native.read_weights(path):
        dtype = getattr(torch, dtype)
        values = (torch.frombuffer(bytearray(raw), dtype=dtype) if raw
                  else torch.empty(0, dtype=dtype))
        state[name] = values.reshape(shape)
    return state


def load_model(folder, weights="final"):
    """The trained model of the run in `folder`, in eval mode: its final weights, the best
    (`weights="best"`, with training.keep_best) or a stacked ensemble member's (an int).
    Raises FileNotFoundError when the run left no such weights (it failed, or did not keep
    them), naming the file."""
    import torch
    folder = os.fspath(folder)
    path = _weights_file(folder, weights)
    if os.path.exists(os.path.join(folder, "suite.json")):
        raise ValueError(f"{folder}: a suite's folder, not a run's: load one of its jobs' models "
                         "(load_model(FOLDER/NAME))")
    if not os.path.exists(path):
        members = [name for name in sorted(os.listdir(folder)) if name.startswith("member_")
                   and name.endswith(".pt")] if os.path.isdir(folder) else []
        if members and weights == "final":
            raise FileNotFoundError(f"{path}: the run is a stacked ensemble of {len(members)} "
                                    f"members, each its own model: pass weights=0 .. "
                                    f"{len(members) - 1}")
        if not os.path.isdir(folder):
            raise FileNotFoundError(f"{folder}: no such run folder")
        if members and weights != "best":
            raise FileNotFoundError(f"{path}: no such member: the run is a stacked ensemble of "
                                    f"{len(members)} (weights=0 .. {len(members) - 1})")
        raise FileNotFoundError(f"{path}: no such weights (the run failed or did not keep them)")
    job_file = os.path.join(folder, "job.json")
    try:
        with open(job_file) as f:
            model = json.load(f)["model"]
        model["type"]
    except (ValueError, KeyError, TypeError) as e:
        raise ValueError(f"{job_file}: not the job.json troupe writes (no model in it: "
                         f"{e!r})") from None
    state = _read_weights(path)
    if model["type"] == "torchscript":
        script = os.path.join(folder, "final_model.pt")
        if not os.path.exists(script):  # a stacked ensemble's: the job's own file, architecture
            script = model["path"]
            if not os.path.exists(script):
                raise FileNotFoundError(
                    f"{path}: the run's model is the TorchScript file {script!r} ({job_file}), "
                    f"a path relative to where the run ran: not found from {os.getcwd()}")
        module = torch.jit.load(script)
    elif model["type"] in ("mlp", "cnn"):
        try:
            module = _built_in(model, state)
        except (KeyError, ValueError, TypeError) as e:
            raise ValueError(f"{path}: not the weights of the run's {model['type']} "
                             f"({job_file}): {e!r}") from None
    else:
        raise ValueError(f"{job_file}: a model of type {model['type']!r}, which troupe does not "
                         "build")
    try:
        module.load_state_dict(state, strict=True)
    except RuntimeError as e:
        raise ValueError(f"{path}: its weights do not fit the run's model ({job_file}): "
                         f"{str(e)[:800]}") from None
    return module.eval()
