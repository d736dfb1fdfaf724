"""Checks a run's outer optimizer against torch.optim.SGD, from two of its checkpoints.

  check_outer_step.py CHECKPOINT_A CHECKPOINT_B LR MOMENTUM

A and B are the checkpoints after two consecutive averaging steps of a local_sgd run with
parallelism.outer_optimizer (SGD with Nesterov momentum). Their state.pt hold the outer state:
outer_base (the weights the replicas start the next round from) and outer_momentum. From them
the round's pseudo-gradient is g = momentum_B - MOMENTUM x momentum_A; PyTorch's SGD, started
at base_A with momentum buffer momentum_A and stepped by g, must give base_B (to rounding: g is
recovered by a subtraction), and every replica's weights in B must be base_B exactly. Prints
what it found; exits 1 when something differs.
"""
import sys

import torch

a_dir, b_dir, lr, momentum = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
a = torch.load(a_dir + "/state.pt")
b = torch.load(b_dir + "/state.pt")
for name, state in (("A", a), ("B", b)):
    for key in ("outer_base", "outer_momentum"):
        if key not in state:
            sys.exit(f"checkpoint {name} has no {key}: {sorted(state)}")
p = torch.nn.Parameter(a["outer_base"].clone())
opt = torch.optim.SGD([p], lr=lr, momentum=momentum, nesterov=True)
opt.state[p]["momentum_buffer"] = a["outer_momentum"].clone()
p.grad = b["outer_momentum"] - momentum * a["outer_momentum"]
opt.step()
worst = (p.detach() - b["outer_base"]).abs().max().item()
scale = b["outer_base"].abs().max().item()
buffer_worst = (opt.state[p]["momentum_buffer"] - b["outer_momentum"]).abs().max().item()
parts = [k for k in b if k.endswith("weights") and k != "best_weights"]
replicas_at_base = all(torch.equal(b[k], b["outer_base"]) for k in parts)
print(f"outer step vs torch.optim.SGD: max |difference| {worst:.3g} (weights up to {scale:.3g}), "
      f"momentum {buffer_worst:.3g}; {len(parts)} replica(s) start from the new base: "
      f"{replicas_at_base}")
ok = worst <= 1e-5 * max(1.0, scale) and buffer_worst <= 1e-6 and replicas_at_base and parts
sys.exit(0 if ok else 1)
