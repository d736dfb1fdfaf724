"""Compares the final weights of two troupe runs (tests only).

  compare_weights.py RUN_A RUN_B TOLERANCE

Loads each run's final_weights.pt with torch.load; exit 0 when both hold the same names and
shapes and the largest absolute difference is at most TOLERANCE, else 1 with the figures.
compare_trajectory.py imports `largest_difference`.
"""
import sys

import torch


def largest_difference(run_a, run_b):
    """The largest absolute difference of two runs' final weights; exits 1 if names differ."""
    a = torch.load(run_a + "/final_weights.pt", weights_only=True)
    b = torch.load(run_b + "/final_weights.pt", weights_only=True)
    if a.keys() != b.keys():
        print(f"different names: {sorted(a)} vs {sorted(b)}")
        sys.exit(1)
    return max((a[k] - b[k]).abs().max().item() for k in a), max(a[k].abs().max().item() for k in a)


if __name__ == "__main__":
    worst, moved = largest_difference(sys.argv[1], sys.argv[2])
    print(f"max abs difference {worst:.3g} (largest weight {moved:.3g})")
    sys.exit(0 if worst <= float(sys.argv[3]) else 1)
