"""Compares the final weights of two troupe runs (tests only).

  compare_weights.py RUN_A RUN_B TOLERANCE

Loads each run's final_weights.pt with torch.load; exit 0 when both hold the same names and
shapes and the largest absolute difference is at most TOLERANCE, else 1 with the figures.
"""
import sys

import torch

a = torch.load(sys.argv[1] + "/final_weights.pt")
b = torch.load(sys.argv[2] + "/final_weights.pt")
tolerance = float(sys.argv[3])
if a.keys() != b.keys():
    print(f"different names: {sorted(a)} vs {sorted(b)}")
    sys.exit(1)
worst = max((a[k] - b[k]).abs().max().item() for k in a)
moved = max(a[k].abs().max().item() for k in a)
print(f"max abs difference {worst:.3g} (largest weight {moved:.3g})")
sys.exit(0 if worst <= tolerance else 1)
