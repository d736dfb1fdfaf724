#!/usr/bin/env python3
"""troupe's learning-rate schedules equal PyTorch's lr_scheduler, step by step.

usage: check_lr_schedules.py LR_RATES_BINARY

For each setting, writes a job file with that optimizer.schedule, runs `lr_rates JOB T` (the
rates troupe's learning_rate gives steps 0..T-1), and compares them with what PyTorch's
schedulers set for the same settings: the rate recorded before each optimizer step, then
opt.step() and scheduler.step(), as a training loop does. Warm-ups are LinearLR chained before
the main scheduler by SequentialLR with the milestone at the warm-up's end; the main scheduler
then runs over T - warmup steps. Fails on any difference above 1e-9.
"""

import json
import math
import os
import subprocess
import sys
import tempfile
import warnings

import torch

TOLERANCE = 1e-9
LR = 0.1


def pytorch_rates(schedule, lr, total):
    """PyTorch's rates of steps 0..total-1 for troupe's `schedule` (the JSON object)."""
    p = torch.nn.Parameter(torch.zeros(1))
    opt = torch.optim.SGD([p], lr=lr)
    sched = torch.optim.lr_scheduler
    kind = schedule["type"]
    if kind == "one_cycle":
        scheduler = sched.OneCycleLR(
            opt,
            max_lr=lr,
            total_steps=total,
            pct_start=float(schedule.get("pct_start", 0.3)),
            anneal_strategy="cos",
            div_factor=float(schedule.get("div_factor", 25.0)),
            final_div_factor=float(schedule.get("final_div_factor", 1e4)),
            cycle_momentum=False,
        )
    else:
        warmup = schedule.get("warmup_steps", 0)
        start_factor = schedule.get("warmup_start_factor", 0.1)
        linear = None
        if warmup > 0:  # built first, as a user would, so it sets initial_lr
            linear = sched.LinearLR(
                opt, start_factor=start_factor, end_factor=1.0, total_iters=warmup
            )
        if kind == "constant":
            main = sched.LambdaLR(opt, lambda _: 1.0)
        elif kind == "step":
            main = sched.StepLR(
                opt, step_size=schedule.get("every", 1), gamma=schedule.get("gamma", 0.1)
            )
        elif kind == "cosine":
            main = sched.CosineAnnealingLR(
                opt, T_max=total - warmup, eta_min=schedule.get("min_lr", 0.0)
            )
        else:
            raise ValueError(kind)
        scheduler = main
        if linear is not None:
            scheduler = sched.SequentialLR(opt, [linear, main], milestones=[warmup])
    rates = []
    for _ in range(total):
        rates.append(opt.param_groups[0]["lr"])
        opt.step()
        scheduler.step()
    return rates


def troupe_rates(binary, schedule, lr, total, directory):
    job = {"name": "lr_check", "optimizer": {"type": "sgd", "lr": lr, "schedule": schedule}}
    path = os.path.join(directory, "job.json")
    with open(path, "w") as f:
        json.dump(job, f)
    out = subprocess.run(
        [binary, path, str(total)], check=True, capture_output=True, text=True
    ).stdout
    return json.loads(out)


def settings():
    """(name, schedule, T): each schedule over 1,000 steps, and short odd runs for off-by-ones."""
    cases = []
    for total in (1000, 10, 7):
        short = total < 100
        warmup = 3 if short else 50
        every = 3 if short else 100
        cases += [
            ("constant", {"type": "constant"}, total),
            ("step", {"type": "step", "every": every, "gamma": 0.5}, total),
            ("cosine", {"type": "cosine", "min_lr": 1e-4}, total),
            ("cosine, no min", {"type": "cosine"}, total),
            (
                "cosine after warm-up",
                {"type": "cosine", "min_lr": 1e-4, "warmup_steps": warmup,
                 "warmup_start_factor": 0.1},
                total,
            ),
            (
                "step after warm-up",
                {"type": "step", "every": every, "gamma": 0.5, "warmup_steps": warmup,
                 "warmup_start_factor": 0.25},
                total,
            ),
            (
                "constant after warm-up",
                {"type": "constant", "warmup_steps": warmup, "warmup_start_factor": 0.1},
                total,
            ),
            ("one_cycle", {"type": "one_cycle"}, total),
            (
                "one_cycle custom",
                {"type": "one_cycle", "pct_start": 0.25, "div_factor": 10,
                 "final_div_factor": 100},
                total,
            ),
        ]
    # Edges: one warm-up step; a warm-up leaving one cosine step; a rise shorter than a step
    # (pct_start * T - 1 < 0); a cycle that ends at its peak's neighbour; a run of one step;
    # decays every step.
    cases += [
        ("cosine after 1 warm-up step", {"type": "cosine", "warmup_steps": 1}, 7),
        (
            "cosine, 1 step after warm-up",
            {"type": "cosine", "min_lr": 1e-3, "warmup_steps": 6, "warmup_start_factor": 0.5},
            7,
        ),
        ("one_cycle short rise", {"type": "one_cycle", "pct_start": 0.1}, 7),
        ("one_cycle half", {"type": "one_cycle", "pct_start": 0.5}, 11),
        ("one_cycle one step", {"type": "one_cycle"}, 1),
        ("cosine one step", {"type": "cosine", "min_lr": 1e-4}, 1),
        ("step every step", {"type": "step", "every": 1, "gamma": 0.9}, 1000),
        (
            "cosine, long warm-up",
            {"type": "cosine", "min_lr": 1e-4, "warmup_steps": 999, "warmup_start_factor": 0.01},
            1000,
        ),
        ("one_cycle odd", {"type": "one_cycle", "pct_start": 0.37, "div_factor": 7.5}, 999),
    ]
    return cases


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = sys.argv[1]
    warnings.simplefilter("ignore")  # SequentialLR's step(0) warns about the epoch argument
    failures = 0
    with tempfile.TemporaryDirectory(prefix="troupe-lr-") as directory:
        for name, schedule, total in settings():
            ours = troupe_rates(binary, schedule, LR, total, directory)
            theirs = pytorch_rates(schedule, LR, total)
            label = f"{name} (T={total})"
            if len(ours) != total or any(not math.isfinite(x) for x in ours):
                print(f"FAIL {label}: {len(ours)} rates, expected {total} finite ones")
                failures += 1
                continue
            diffs = [abs(a - b) for a, b in zip(ours, theirs)]
            worst = max(range(total), key=lambda i: diffs[i])
            ok = diffs[worst] <= TOLERANCE
            failures += not ok
            print(
                f"{'ok  ' if ok else 'FAIL'} {label:40s} worst |diff| {diffs[worst]:.3g} "
                f"at step {worst} (troupe {ours[worst]:.17g}, torch {theirs[worst]:.17g})"
            )
    if failures:
        print(f"{failures} setting(s) differ from PyTorch by more than {TOLERANCE}")
        return 1
    print("all schedules equal PyTorch's within", TOLERANCE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
