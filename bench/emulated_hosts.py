"""Summed by host against the flat ring, over emulated hosts, side by side.

  /usr/bin/python3 bench/emulated_hosts.py [--build build] [--hosts 4] [--nodes-per-host 2]
      [--rate 1gbit] [--delay 0.2ms] [--steps 300] [--warmup 30] [--repeats 3]
      [--models mlp,cnn]

Runs each model's job (configs/fashion_mlp_sync.json, configs/fashion_cnn_sync.json, with
parallelism.replicas = HOSTS x NODES_PER_HOST, one per node) over scripts/emulate_hosts.sh:
HOSTS network namespaces on a bridge, each link shaped to RATE with DELAY one way, each host
with its own /dev/shm, NODES_PER_HOST `troupe node` processes per host. Variants, alternated
repeat by repeat so that machine noise hits both alike:
  by_host   the default: each host's nodes sum in its shared memory, the hosts' leaders over the
            socket ring, the total handed back in each host
  flat      cluster.shared_memory=false: every rank in one socket ring over the network
samples/s counts the steps after WARMUP from metrics.jsonl (nodes_training.py's timed_rate).
Prints JSON: per model the median samples/s of each variant, every repeat, the final train
losses (the same training must learn the same), and by_host / flat (target on the MLP: >= 1.3).
Where the kernel has no netem queue, DELAY cannot be applied: the JSON says so and the links are
shaped by rate alone. Where the machine cannot emulate hosts at all, prints why and exits 0.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from nodes_training import timed_rate, write_job  # noqa: E402

MODELS = {"mlp": "fashion_mlp_sync.json", "cnn": "fashion_cnn_sync.json"}
SKIPPED = 77


def emulate(args, job, out, delay, extra):
    """One run over the emulated hosts; the script's exit status and its output."""
    cmd = [os.path.join(HERE, "..", "scripts", "emulate_hosts.sh"), "--hosts", str(args.hosts),
           "--nodes-per-host", str(args.nodes_per_host), "--rate", args.rate,
           "--troupe", os.path.join(args.build, "apps", "troupe")]
    if delay:
        cmd += ["--delay", delay]
    cmd += ["--", job, "--out", out, "--quiet"] + extra
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    return done.returncode, done.stdout + done.stderr


class Skipped(Exception):
    """This machine cannot emulate hosts (the script's last line says why)."""


def emulate_run(hosts, nodes_per_host, rate, build, job, out, extra, what):
    """One run over the emulated hosts that must succeed: raises Skipped where the machine
    cannot emulate hosts, RuntimeError naming `what` when the run fails."""
    status, text = emulate(argparse.Namespace(hosts=hosts, nodes_per_host=nodes_per_host,
                                              rate=rate, build=build), job, out, None, extra)
    if status == SKIPPED:
        raise Skipped(text.strip().splitlines()[-1])
    if status != 0:
        raise RuntimeError(f"{what}: exit {status}\n{text[-2000:]}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    p.add_argument("--hosts", type=int, default=4)
    p.add_argument("--nodes-per-host", type=int, default=2)
    p.add_argument("--rate", default="1gbit")
    p.add_argument("--delay", default="0.2ms")
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--warmup", type=int, default=30)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--models", default="mlp,cnn")
    args = p.parse_args()
    if not 0 <= args.warmup < args.steps - 1:
        sys.exit("--warmup must be below --steps - 1")
    models = args.models.split(",")
    for m in models:
        if m not in MODELS:
            sys.exit(f"--models: unknown model {m!r} (known: {', '.join(MODELS)})")
    ranks = args.hosts * args.nodes_per_host
    variants = {"by_host": [], "flat": ["--set", "cluster.shared_memory=false"]}
    delay = args.delay
    delay_note = f"{args.delay} one way (netem)"
    result = {"benchmark": "emulated_hosts", "hosts": args.hosts,
              "nodes_per_host": args.nodes_per_host, "rate": args.rate, "steps": args.steps,
              "warmup": args.warmup, "repeats": args.repeats, "models": {}}
    with tempfile.TemporaryDirectory() as work:
        for model in models:
            job_dir = os.path.join(work, model)
            os.makedirs(job_dir)
            job = write_job(os.path.join(HERE, "..", "configs", MODELS[model]), args.steps,
                            job_dir)
            extra = ["--set", f"parallelism.replicas={ranks}"]
            rates = {v: [] for v in variants}
            losses = {v: [] for v in variants}
            for repeat in range(args.repeats):
                for name, sets in variants.items():
                    out = os.path.join(job_dir, f"{name}-{repeat}")
                    status, text = emulate(args, job, out, delay, extra + sets)
                    if status == SKIPPED and delay and "netem" in text:
                        delay_note = ("not applied: " + text.strip().splitlines()[-1] +
                                      "; links shaped by rate alone")
                        delay = None
                        status, text = emulate(args, job, out, delay, extra + sets)
                    if status == SKIPPED:
                        print(json.dumps({"benchmark": "emulated_hosts",
                                          "skipped": text.strip().splitlines()[-1]}, indent=2))
                        return
                    if status != 0:
                        raise RuntimeError(f"{model} {name}: exit {status}\n{text[-2000:]}")
                    rates[name].append(timed_rate(out, args.warmup))
                    with open(os.path.join(out, "summary.json")) as f:
                        losses[name].append(json.load(f)["final_train_loss"])
            medians = {v: statistics.median(r) for v, r in rates.items()}
            result["models"][model] = {
                "samples_per_s": medians,
                "repeats_samples_per_s": rates,
                "final_train_loss": losses,
                "by_host_over_flat": medians["by_host"] / medians["flat"],
            }
    result["delay"] = delay_note
    if "mlp" in result["models"]:
        ratio = result["models"]["mlp"]["by_host_over_flat"]
        result["target_mlp_by_host_over_flat"] = {"target": 1.3, "met": ratio >= 1.3}
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
