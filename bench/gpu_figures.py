"""Issue 37's figures on a GPU, troupe beside the same training written in PyTorch, in one run.

  python3 bench/gpu_figures.py --build build-gpu --data DIR --out FILE.json [--kind nvidia-h200]

scripts/gpu.sh runs it on the device machine after building troupe with CUDA. Every figure is a
ratio of samples per second measured here, in this run, on this GPU (best of --rounds alternated
rounds, each after untimed warm-up steps):

  mlp_over_pytorch        troupe 1 replica (gpu_train_bench --model mlp --cuda-graph) over a
                          plain PyTorch eager loop: the built-in MLP 784-256-128-10, SGD lr 0.05
                          momentum 0.9, batch 128, the data resident on the GPU; troupe's step
                          captured as a CUDA graph (mlp_eager_over_pytorch: without)
  resnet18_over_pytorch   the same with torchvision's ResNet-18 (1-channel conv1, 10 classes),
                          scripted for troupe, eager for PyTorch, batch 256, troupe eager
                          (resnet18_graph_over_pytorch: its step captured)
  ensemble*_over_vmap     troupe's stacked ensemble of MLPs (gpu_train_bench --members K
  ensemble*_over_loop     --cuda-graph) over torch.func (stack_module_state, vmap,
                          functional_call) training the same members, and over them trained one
                          after another, in member-samples/s (each batch row trains every
                          member); its gradient work captured as a CUDA graph
                          (ensemble*_eager_over_vmap: without)
  resnet18_fp16_over_amp  troupe's ResNet-18 with training.precision "fp16" (autocast, dynamic
                          loss scaling) over PyTorch's autocast(float16) + GradScaler loop
                          (resnet18_fp16_graph_over_amp: troupe's fp16 step captured)
  resnet18_fp16_over_fp32 troupe's fp16 ResNet-18 over its float32 one, in this run
  suite8_over_sequential  8 MLP jobs (300 steps) sharing the GPU as one suite, each in its own
                          process capped at 2 GB (gpu_memory_mb), over the same 8 one after
                          another, in wall time
  cap_fails_alone         in a suite of three on the GPU, one capped at 1 MB fails naming its
                          cap while the other two end with the weights of their runs alone
  gpu_vs_cpu_max_abs_diff 50 sync steps of the built-in MLP, 2 replicas, GPU against CPU, both
                          with the job key `deterministic` (TF32 off); the CNN's under notes
  deterministic_rerun_bitwise  the GPU's run of those 50 steps twice, MLP and CNN: the same bits?
  pipeline_bubble         an MLP (4 hidden layers of 2048, batch 512) as 2 stages on cuda:0 with
  pipeline_step_s         4 micro-batches: the measured bubble and seconds per step (troupe_runs
                          holds the 1-replica step time and the predicted bubble beside them)

What this run cannot measure is null, with the reason under "notes". Writes the whole object to
--out (bench/results/gpu-DATE-KIND.json's shape) after each group of figures, so that a run cut
short keeps what it measured, and prints it at the end.
"""
import argparse
import copy
import datetime
import filecmp
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def load_images(folder):
    with gzip.open(os.path.join(folder, "train-images-idx3-ubyte.gz")) as f:
        images = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 1, 28, 28)
    with gzip.open(os.path.join(folder, "train-labels-idx1-ubyte.gz")) as f:
        labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    x = torch.from_numpy(images.astype(np.float32) / 255.0).cuda()
    y = torch.from_numpy(labels.astype(np.int64)).cuda()
    return x, y


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128),
                         nn.ReLU(), nn.Linear(128, 10))


def resnet18():
    import torchvision
    model = torchvision.models.resnet18(num_classes=10)
    model.conv1 = nn.Conv2d(1, 64, kernel_size=7, stride=2, padding=3, bias=False)
    return model


def timed(step, warmup, steps):
    """Seconds for `steps` calls of step() after `warmup` untimed ones, the GPU drained."""
    for i in range(warmup):
        step(i)
    torch.cuda.synchronize()
    start = time.perf_counter()
    for i in range(steps):
        step(warmup + i)
    torch.cuda.synchronize()
    return time.perf_counter() - start


def plain_loop(model, x, y, batch, warmup, steps, amp=False):
    """Samples/s of the loop anyone would write: zero_grad, forward, loss, backward, step; with
    amp, the forward under autocast(float16) and the loss scaled by a GradScaler, as the
    PyTorch recipe has it."""
    torch.manual_seed(1)
    model = model.cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    gen = torch.Generator(device="cuda").manual_seed(1)
    order = torch.randint(0, x.shape[0], ((warmup + steps) * batch,), device="cuda", generator=gen)
    scaler = torch.amp.GradScaler("cuda") if amp else None

    def step(i):
        idx = order[i * batch:(i + 1) * batch]
        opt.zero_grad()
        F.cross_entropy(model(x[idx]), y[idx]).backward()
        opt.step()

    def amp_step(i):
        idx = order[i * batch:(i + 1) * batch]
        opt.zero_grad()
        with torch.autocast("cuda", dtype=torch.float16):
            logits = model(x[idx])
        scaler.scale(F.cross_entropy(logits.float(), y[idx])).backward()
        scaler.step(opt)
        scaler.update()

    return steps * batch / timed(amp_step if amp else step, warmup, steps)


def ensemble_loop(members, x, y, batch, warmup, steps):
    """Member-samples/s of `members` MLPs trained one after another, each by the plain loop."""
    total = 0.0
    for m in range(members):
        torch.manual_seed(m)
        total += steps * batch / plain_loop(mlp(), x, y, batch, warmup, steps)
    return members * steps * batch / total


def ensemble_vmap(members, x, y, batch, warmup, steps):
    """Member-samples/s of the same members as one vmapped function (torch.func)."""
    from torch.func import functional_call, grad, stack_module_state, vmap
    models = []
    for m in range(members):
        torch.manual_seed(m)
        models.append(mlp().cuda())
    params, buffers = stack_module_state(models)
    base = copy.deepcopy(models[0]).to("meta")

    def loss(p, b, xb, yb):
        return F.cross_entropy(functional_call(base, (p, b), (xb,)), yb)

    grads_of = vmap(grad(loss), in_dims=(0, 0, None, None))
    names = list(params)
    weights = [params[n] for n in names]
    momenta = [torch.zeros_like(w) for w in weights]
    gen = torch.Generator(device="cuda").manual_seed(1)
    order = torch.randint(0, x.shape[0], ((warmup + steps) * batch,), device="cuda", generator=gen)

    def step(i):
        idx = order[i * batch:(i + 1) * batch]
        g = grads_of(params, buffers, x[idx], y[idx])
        with torch.no_grad():
            grads = [g[n] for n in names]
            torch._foreach_mul_(momenta, 0.9)
            torch._foreach_add_(momenta, grads)
            torch._foreach_add_(weights, momenta, alpha=-0.05)

    return members * steps * batch / timed(step, warmup, steps)


def troupe_bench(build, data, model, batch, warmup, steps, rounds, equivalence, members=0,
                 precision="fp32", cuda_graph=False):
    """gpu_train_bench's JSON: troupe 1 replica and its C++ plain loop on this GPU, or (members)
    a stacked ensemble; with cuda_graph, troupe's steps captured (training.cuda_graph)."""
    command = [os.path.join(build, "bench", "gpu_train_bench"), "--data", data, "--model", model,
               "--batch", str(batch), "--warmup", str(warmup), "--steps", str(steps),
               "--rounds", str(rounds), "--replicas", "1", "--precision", precision]
    if members:
        command += ["--members", str(members)]
    if cuda_graph:
        command.append("--cuda-graph")
    if not equivalence:
        command.append("--no-equivalence")
    log("$", " ".join(command))
    done = subprocess.run(command, capture_output=True, text=True, timeout=180)
    log(done.stderr.strip())
    if done.returncode != 0:
        raise RuntimeError(f"gpu_train_bench exited {done.returncode}: {done.stderr.strip()[-400:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    log(json.dumps(result))
    return result


def run_troupe(build, folder, job, out):
    """`troupe run` of `job` into folder/out: (wall seconds, the finished process)."""
    path = os.path.join(folder, out + ".json")
    with open(path, "w") as f:
        json.dump(job, f)
    start = time.perf_counter()
    done = subprocess.run([os.path.join(build, "apps", "troupe"), "run", path, "--out",
                           os.path.join(folder, out), "--quiet"],
                          capture_output=True, text=True, timeout=150)
    return time.perf_counter() - start, done


def pipeline_figures(build, data):
    """Figure 5: an MLP of four 2048-wide hidden layers at batch 512 as a pipeline of 2 stages
    on cuda:0 with 4 micro-batches (1F1B), against the same job as 1 replica: the measured
    bubble (idle share of the stages' step windows), the predicted one, and the step times."""
    folder = tempfile.mkdtemp(prefix="troupe-gpu-pipeline-")
    job = {"name": "gpu_pipeline", "model": {"type": "mlp", "hidden": [2048, 2048, 2048, 2048]},
           "data": {"type": "fashion_mnist", "path": data},
           "optimizer": {"type": "sgd", "lr": 0.01, "momentum": 0.9},
           "training": {"steps": 200, "batch_size": 512, "eval_interval": 200},
           "parallelism": {"replicas": 1, "threads_per_replica": 1}, "device": "cuda:0"}
    out = {}
    for key, parallelism in (("replica", {}),
                             ("pipeline", {"stages": 2, "micro_batches": 4,
                                           "schedule": "1f1b"})):
        run = copy.deepcopy(job)
        run["parallelism"].update(parallelism)
        _, done = run_troupe(build, folder, run, key)
        if done.returncode != 0:
            raise RuntimeError(f"the {key} run exited {done.returncode}: {done.stderr[-400:]}")
        with open(os.path.join(folder, key, "summary.json")) as f:
            summary = json.load(f)
        out[key + "_step_s"] = summary["train_s"] / summary["steps"]
        out[key + "_test_accuracy"] = summary.get("test_accuracy")
        if key == "pipeline":
            out["bubble"] = summary.get("bubble_fraction")
            out["predicted_bubble"] = summary.get("predicted_bubble_fraction")
    log(f"pipeline on cuda:0: {out}")
    shutil.rmtree(folder, ignore_errors=True)
    return out


def suite_figures(build, data):
    """Wall seconds of 8 MLP jobs (300 steps, batch 128) on cuda:0 as one suite, 8 at once, each
    capped at 2 GB (gpu_memory_mb), and of the same 8 run one after another; then a suite of
    three where one is capped at 1 MB: it must fail naming its cap while the two others succeed
    with the weights of their runs alone."""
    folder = tempfile.mkdtemp(prefix="troupe-gpu-suite-")
    base = {"name": "gpu_suite", "model": {"type": "mlp", "hidden": [256, 128]},
            "data": {"type": "fashion_mnist", "path": data},
            "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
            "training": {"steps": 300, "batch_size": 128, "eval_interval": 300},
            "parallelism": {"replicas": 1, "threads_per_replica": 1},
            "device": "cuda:0", "deterministic": True, "gpu_memory_mb": 2048}

    def run(job, out):
        return run_troupe(build, folder, job, out)

    suite = dict(base, devices=[{"device": "cuda:0", "threads": 8}], sweep={"seed": list(range(8))})
    suite_s, done = run(suite, "suite8")
    log(f"suite of 8: {suite_s:.1f} s, exit {done.returncode}")
    if done.returncode != 0:
        raise RuntimeError(f"the suite of 8 exited {done.returncode}: {done.stderr[-400:]}")
    sequential_s = 0.0
    for seed in range(8):
        seconds, done = run(dict(base, seed=seed), f"alone{seed}")
        if done.returncode != 0:
            raise RuntimeError(f"job {seed} alone exited {done.returncode}: {done.stderr[-400:]}")
        sequential_s += seconds
    log(f"8 one after another: {sequential_s:.1f} s")

    capped = dict(base, devices=[{"device": "cuda:0", "threads": 3}],
                  jobs=[{"name": "a", "seed": 0}, {"name": "starved", "gpu_memory_mb": 1},
                        {"name": "b", "seed": 1}])
    _, done = run(capped, "capped")
    with open(os.path.join(folder, "capped", "summary.json")) as f:
        jobs = {j["name"]: j for j in json.load(f)["jobs"]}
    starved = jobs.get("starved", {})
    same = all(filecmp.cmp(os.path.join(folder, "capped", name, "final_weights.pt"),
                           os.path.join(folder, f"alone{seed}", "final_weights.pt"), shallow=False)
               for name, seed in (("a", 0), ("b", 1))
               if jobs.get(name, {}).get("status") == "succeeded")
    fails_alone = (starved.get("status") == "failed" and
                   "gpu_memory_mb caps" in (starved.get("error") or "") and
                   jobs.get("a", {}).get("status") == "succeeded" and
                   jobs.get("b", {}).get("status") == "succeeded" and same)
    log(f"capped suite: starved {starved.get('status')}: {starved.get('error')}; "
        f"the others equal alone: {same}")
    shutil.rmtree(folder, ignore_errors=True)
    return {"suite_s": suite_s, "sequential_s": sequential_s, "cap_fails_alone": fails_alone,
            "starved_error": starved.get("error")}


def profile_table(model, x, y, batch):
    """Where a PyTorch step's time goes: the profiler's ten costliest operators over 20 steps."""
    from torch.profiler import ProfilerActivity, profile
    model = model.cuda().train()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    for _ in range(5):
        opt.zero_grad()
        F.cross_entropy(model(x[:batch]), y[:batch]).backward()
        opt.step()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(20):
            opt.zero_grad()
            F.cross_entropy(model(x[:batch]), y[:batch]).backward()
            opt.step()
        torch.cuda.synchronize()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=10)


def best(measure, rounds):
    return max(measure() for _ in range(rounds))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default="build-gpu")
    parser.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    parser.add_argument("--out", required=True)
    parser.add_argument("--kind", default="")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        sys.exit("gpu_figures: no CUDA device is visible to PyTorch")

    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"],
                         capture_output=True, text=True).stdout.strip().split(", ")
    figures = {k: None for k in (
        "mlp_over_pytorch", "mlp_eager_over_pytorch", "resnet18_over_pytorch",
        "resnet18_graph_over_pytorch", "resnet18_fp16_over_amp", "resnet18_fp16_graph_over_amp",
        "resnet18_fp16_over_fp32", "ensemble32_over_vmap", "ensemble32_eager_over_vmap",
        "ensemble128_over_vmap", "ensemble128_eager_over_vmap", "ensemble32_over_loop",
        "suite8_over_sequential",
        "cap_fails_alone", "gpu_vs_cpu_max_abs_diff", "deterministic_rerun_bitwise",
        "pipeline_bubble",
        "pipeline_step_s")}
    notes, baselines, troupe = {}, {}, {}
    x, y = load_images(args.data)

    def save():
        """Writes what is measured so far to --out (replaced whole, through a temporary file):
        a run the device call stops at its time limit still leaves every finished figure."""
        result = {
            "device": smi[0] if smi else None,
            "driver": smi[1] if len(smi) > 1 else None,
            "torch": torch.__version__,
            "kind": args.kind,
            "date": datetime.date.today().isoformat(),
            "tf32_cudnn": torch.backends.cudnn.allow_tf32,
            "figures": figures,
            "baselines_samples_per_s": baselines,
            "troupe_runs": troupe,
            "notes": notes,
        }
        with open(args.out + ".tmp", "w") as f:
            json.dump(result, f, indent=2)
        os.replace(args.out + ".tmp", args.out)
        return result

    def against_pytorch(key, rounds, pytorch, model, batch, warmup, steps, precision="fp32",
                        figure=None, cuda_graph=False):
        """PyTorch's loop and troupe's run of the same training, alternated `rounds` times: the
        best samples/s of each; troupe's None (the reason in notes) when its run failed."""
        figure = figure or f"{key}_over_pytorch"
        ours, theirs = [], []
        for _ in range(rounds):
            theirs.append(pytorch())
            try:
                troupe[key] = troupe_bench(args.build, args.data, model, batch, warmup, steps, 1,
                                           False, precision=precision, cuda_graph=cuda_graph)
                ours.append(troupe[key]["troupe"][0]["samples_per_s"])
            except Exception as e:  # noqa: BLE001  the reason goes into the notes
                notes[figure] = str(e)
                break
        if ours:
            figures[figure] = max(ours) / max(theirs)
            troupe[f"{key}_best_samples_per_s"] = max(ours)
        return max(theirs)

    # 1. The MLP at batch 128: troupe against PyTorch eager, alternated round by round, troupe's
    # step captured as a CUDA graph (training.cuda_graph: the figure) and eager (beside it).
    baselines["pytorch_mlp_b128"] = against_pytorch(
        "mlp", args.rounds, lambda: plain_loop(mlp(), x, y, 128, 30, 300), "mlp", 128, 30, 300,
        cuda_graph=True)
    against_pytorch("mlp_eager", args.rounds, lambda: plain_loop(mlp(), x, y, 128, 30, 300),
                    "mlp", 128, 30, 300)
    log("pytorch MLP profile:\n" + profile_table(mlp(), x, y, 128))

    save()
    # 2. ResNet-18 at batch 256 (scripted for troupe: the same module, the same initial weights).
    folder = tempfile.mkdtemp(prefix="troupe-gpu-figures-")
    script = os.path.join(folder, "resnet18.pt")
    torch.manual_seed(1)
    torch.jit.script(resnet18()).save(script)
    baselines["pytorch_resnet18_b256"] = against_pytorch(
        "resnet18", max(1, args.rounds - 1), lambda: plain_loop(resnet18(), x, y, 256, 10, 60),
        script, 256, 10, 60)
    against_pytorch("resnet18_graph", max(1, args.rounds - 1),
                    lambda: plain_loop(resnet18(), x, y, 256, 10, 60), script, 256, 10, 60,
                    cuda_graph=True)
    log("pytorch ResNet-18 profile:\n" + profile_table(resnet18(), x, y, 256))
    # ... and in fp16: troupe's autocast and loss scaling against PyTorch's AMP recipe.
    baselines["pytorch_amp_resnet18_b256"] = against_pytorch(
        "resnet18_fp16", max(1, args.rounds - 1),
        lambda: plain_loop(resnet18(), x, y, 256, 10, 60, amp=True), script, 256, 10, 60,
        precision="fp16", figure="resnet18_fp16_over_amp")
    against_pytorch("resnet18_fp16_graph", max(1, args.rounds - 1),
                    lambda: plain_loop(resnet18(), x, y, 256, 10, 60, amp=True), script, 256, 10,
                    60, precision="fp16", figure="resnet18_fp16_graph_over_amp", cuda_graph=True)
    if "resnet18_fp16_best_samples_per_s" in troupe and "resnet18_best_samples_per_s" in troupe:
        figures["resnet18_fp16_over_fp32"] = (troupe["resnet18_fp16_best_samples_per_s"] /
                                              troupe["resnet18_best_samples_per_s"])

    save()
    # 3. Ensembles of MLPs at batch 128, in member-samples/s: troupe's stacked ensemble, its
    # gradient work captured (the figure) and eager, against torch.func's vmap of the same
    # members, alternated, and against them one after another.
    for members in (32, 128):
        vmap = []
        stacked = {"": [], "_eager": []}
        for _ in range(args.rounds):
            vmap.append(ensemble_vmap(members, x, y, 128, 10, 100))
            for variant, runs in stacked.items():
                figure = f"ensemble{members}{variant}_over_vmap"
                if figure in notes:
                    continue
                try:
                    run = troupe_bench(args.build, args.data, "mlp", 128, 10, 100, 1, False,
                                       members, cuda_graph=not variant)
                    troupe[f"ensemble{members}{variant}"] = run
                    runs.append(run["troupe"][0]["member_samples_per_s"])
                except Exception as e:  # noqa: BLE001
                    notes[figure] = str(e)
        baselines[f"vmap_{members}_mlp_b128"] = max(vmap)
        for variant, runs in stacked.items():
            if runs:
                troupe[f"ensemble{members}{variant}_member_samples_per_s"] = max(runs)
                figures[f"ensemble{members}{variant}_over_vmap"] = max(runs) / max(vmap)
    baselines["loop_32_mlp_b128"] = ensemble_loop(32, x, y, 128, 5, 50)
    # The captured ensemble's rate, or the eager one's where capturing failed (said in notes).
    for variant in ("", "_eager"):
        if f"ensemble32{variant}_member_samples_per_s" in troupe:
            figures["ensemble32_over_loop"] = (troupe[f"ensemble32{variant}_member_samples_per_s"]
                                               / baselines["loop_32_mlp_b128"])
            break

    save()
    # 4. GPU against CPU weights, 50 sync steps of 2 replicas with `deterministic`: the MLP (the
    # figure), and the CNN, whose max-pools see exact ties wherever an image is flat (Fashion-
    # MNIST's black background): cuDNN and the CPU pass such a tie's gradient to different
    # inputs, a difference of kind, not of rounding, that 50 steps carry far past 1e-4.
    for model, key in (("mlp", "mlp_equivalence"), ("cnn", "cnn")):
        try:
            troupe[key] = troupe_bench(args.build, args.data, model, 128, 30, 300, 1, True)
        except Exception as e:  # noqa: BLE001
            notes[f"{model}_gpu_vs_cpu"] = str(e)
    if "mlp_equivalence" in troupe:
        figures["gpu_vs_cpu_max_abs_diff"] = troupe["mlp_equivalence"]["gpu_vs_cpu_max_abs_diff"]
        figures["deterministic_rerun_bitwise"] = all(
            troupe[k]["deterministic_rerun_bitwise"] for k in ("mlp_equivalence", "cnn")
            if k in troupe)
    if "cnn" in troupe:
        notes["cnn_gpu_vs_cpu_max_abs_diff"] = (
            f"{troupe['cnn']['gpu_vs_cpu_max_abs_diff']:.3g}: max-pool ties on flat image "
            "regions send gradients to different inputs on cuDNN and on the CPU")
    save()
    # 5. A suite of 8 MLP jobs sharing the GPU, each in its own process under a memory cap,
    # against the same 8 run one after another; and a job over its cap failing alone.
    try:
        suite = suite_figures(args.build, args.data)
        troupe["suite"] = suite
        figures["suite8_over_sequential"] = suite["sequential_s"] / suite["suite_s"]
        figures["cap_fails_alone"] = suite["cap_fails_alone"]
    except Exception as e:  # noqa: BLE001
        notes["suite8_over_sequential"] = str(e)
    save()
    # 6. A pipeline of 2 stages on cuda:0 with 4 micro-batches against 1 replica.
    try:
        pipeline = pipeline_figures(args.build, args.data)
        troupe["pipeline"] = pipeline
        figures["pipeline_bubble"] = pipeline["bubble"]
        figures["pipeline_step_s"] = pipeline["pipeline_step_s"]
    except Exception as e:  # noqa: BLE001
        notes["pipeline_bubble"] = notes["pipeline_step_s"] = str(e)

    print(json.dumps(save(), indent=2))


if __name__ == "__main__":
    main()
