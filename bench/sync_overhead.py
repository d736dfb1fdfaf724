"""Runs troupe's sync benchmark side by side with its references and reports the ratios.

  /usr/bin/python3 bench/sync_overhead.py [--build build] [--rounds 3] [--steps 300]
      [--model mlp|cnn]

Variants, alternated round by round so that machine noise hits all of them alike:
  plain_1t      plain LibTorch loop, 1 intra-op thread          (bench/sync_overhead.cpp)
  plain_2t      plain LibTorch loop, 2 intra-op threads
  troupe_1x1    troupe sync, 1 replica x 1 thread
  troupe_1x2    troupe sync, 1 replica x 2 threads
  troupe_2x1    troupe sync, 2 replicas x 1 thread
  engines_2x1   troupe's replica compute, 2 engines on 2 threads at once exchanging nothing:
                the most troupe's 2 replicas can reach on this machine
  halves_2x1    2 plain 1-thread loops in 2 processes at once, each on half the global batch,
                exchanging nothing (samples/s added): the most any split of the batch over 2
                replicas can reach with LibTorch's kernels on this machine
  ddp_2x1       PyTorch DDP + gloo, 2 ranks x 1 thread            (bench/ddp_gloo.py)
Prints JSON: the median samples/s of each variant, every round's figure, each variant's peak
resident memory (the largest over its rounds; DDP's is its launcher's), and the ratios
  troupe_1x1 / plain_1t   (target >= 0.97)
  troupe_2x1 / plain_1t   (target >= 1.7 on the MLP, 1.8 on the CNN)
  best troupe / best plain (target >= 1.0)
  troupe_2x1 / ddp_2x1    (target >= 1.25)
  engines_2x1 / plain_1t  (the ceiling of troupe_2x1 / plain_1t here)
  troupe_2x1 / engines_2x1 (what the exchange leaves of that ceiling)
  halves_2x1 / plain_1t   (the same ceiling without troupe: where it is below the 2 x 1 target,
                           a step on half the rows costs more than half a step)
  troupe_2x1 / halves_2x1 (what troupe leaves of that ceiling)
Memory: each troupe variant's peak against R x (model + optimizer) + the global batch (its
`state_mb`: weights, gradient and optimizer buffers, float32) plus a fixed amount: what the
plain 1-thread loop holds beyond its own state (LibTorch, the data set, activations) and
FIXED_MB more (CAF's actor system, the driver, each replica thread's stack and BLAS buffers).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FIXED_MB = 32.0  # what troupe may hold beyond a plain loop's memory, whatever R (see above)


def run_one(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:  # its own message, not only "returned non-zero exit status 1"
        sys.exit(f"{' '.join(cmd)}: exit {done.returncode}\n{done.stderr.strip()[-2000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def run_at_once(cmds):
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, text=True) for c in cmds]
    results = []
    for proc, cmd in zip(procs, cmds):
        out, _ = proc.communicate()
        if proc.returncode != 0:
            raise subprocess.CalledProcessError(proc.returncode, cmd)
        results.append(json.loads(out.strip().splitlines()[-1]))
    return results


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--steps", type=int, default=3000)
    p.add_argument("--warmup", type=int, default=100)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--model", choices=["mlp", "cnn"], default="mlp")
    args = p.parse_args()
    exe = os.path.join(args.build, "bench", "sync_overhead")
    timing = ["--steps", str(args.steps), "--warmup", str(args.warmup)]
    common = timing + ["--batch", str(args.batch)]
    model = ["--model", args.model]
    variants = {
        "plain_1t": [exe, "--variant", "plain", "--threads", "1"] + common + model,
        "plain_2t": [exe, "--variant", "plain", "--threads", "2"] + common + model,
        "troupe_1x1": [exe, "--variant", "troupe", "--replicas", "1", "--threads", "1"] + common
        + model,
        "troupe_1x2": [exe, "--variant", "troupe", "--replicas", "1", "--threads", "2"] + common
        + model,
        "troupe_2x1": [exe, "--variant", "troupe", "--replicas", "2", "--threads", "1"] + common
        + model,
        "engines_2x1": [exe, "--variant", "engines", "--replicas", "2", "--threads", "1"] + common
        + model,
    }
    half = args.batch // 2
    halves = [[exe, "--variant", "plain", "--threads", "1", "--batch", str(rows)] + timing + model
              for rows in (half, args.batch - half)]
    if args.model == "mlp":  # bench/ddp_gloo.py builds the MLP only
        variants["ddp_2x1"] = [sys.executable, os.path.join(HERE, "ddp_gloo.py"), "--ranks", "2",
                               "--threads", "1"] + common
    variants["halves_2x1"] = halves  # a list of commands: run at once
    rates = {name: [] for name in variants}
    # None where the variant reports none (DDP's ranks, the halves' processes): 0.0 read as a
    # measured figure.
    peak_mb = {name: None for name in variants}
    state_mb = {}
    for round_index in range(args.rounds):
        for name, cmd in variants.items():
            if isinstance(cmd[0], list):  # processes at once: their rates add up
                result = {"samples_per_s": sum(r["samples_per_s"] for r in run_at_once(cmd))}
            else:
                result = run_one(cmd)
            rate = result["samples_per_s"]
            rates[name].append(rate)
            if "peak_rss_mb" in result:
                peak_mb[name] = max(peak_mb[name] or 0.0, result["peak_rss_mb"])
            if "state_mb" in result:
                state_mb[name] = result["state_mb"]
            print(f"round {round_index + 1} {name}: {rate:.0f} samples/s", file=sys.stderr)
    median = {name: statistics.median(r) for name, r in rates.items()}
    best_troupe = max(v for k, v in median.items() if k.startswith("troupe"))
    best_plain = max(v for k, v in median.items() if k.startswith("plain"))
    ratios = {
        "troupe_1x1_over_plain_1t": median["troupe_1x1"] / median["plain_1t"],
        "troupe_2x1_over_plain_1t": median["troupe_2x1"] / median["plain_1t"],
        "troupe_1x2_over_plain_2t": median["troupe_1x2"] / median["plain_2t"],
        "best_troupe_over_best_plain": best_troupe / best_plain,
        "engines_2x1_over_plain_1t": median["engines_2x1"] / median["plain_1t"],
        "troupe_2x1_over_engines_2x1": median["troupe_2x1"] / median["engines_2x1"],
        "halves_2x1_over_plain_1t": median["halves_2x1"] / median["plain_1t"],
        "troupe_2x1_over_halves_2x1": median["troupe_2x1"] / median["halves_2x1"],
    }
    targets = {"troupe_1x1_over_plain_1t": 0.97,
               "troupe_2x1_over_plain_1t": 1.7 if args.model == "mlp" else 1.8,
               "best_troupe_over_best_plain": 1.0}
    # The fixed amount: the plain loop's memory beyond its own state, plus FIXED_MB.
    fixed_mb = peak_mb["plain_1t"] - state_mb["plain_1t"] + FIXED_MB
    memory = {name: {"peak_rss_mb": peak_mb[name], "state_mb": state_mb[name],
                     "bound_mb": state_mb[name] + fixed_mb}
              for name in variants if name.startswith("troupe")}
    if "ddp_2x1" in median:
        ratios["troupe_2x1_over_ddp_2x1"] = median["troupe_2x1"] / median["ddp_2x1"]
        targets["troupe_2x1_over_ddp_2x1"] = 1.25
    print(json.dumps({
        "benchmark": "sync_overhead",
        "model": "mlp 784-256-128-10" if args.model == "mlp" else "cnn 16-32 k5, 128",
        "batch": args.batch, "steps": args.steps,
        "rounds": args.rounds,
        "median_samples_per_s": median,
        "samples_per_s_by_round": rates,
        "peak_rss_mb": peak_mb,
        "ratios": ratios,
        "memory": {"fixed_mb": fixed_mb, "by_variant": memory},
        "targets_met": dict({k: ratios[k] >= v for k, v in targets.items()},
                            memory_within_bound=all(m["peak_rss_mb"] <= m["bound_mb"]
                                                    for m in memory.values())),
    }, indent=2))


if __name__ == "__main__":
    main()
