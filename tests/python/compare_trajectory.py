"""Is a run the same mini-batch SGD as a reference run, up to the order of float sums? (tests)

  compare_trajectory.py REF_RUN RUN TOLERANCE

Two runs that sum the same gradients in another order differ by about 1e-7 in their weights,
and usually end within TOLERANCE of each other. Not always: when a ReLU's pre-activation lies
within that noise of zero, one run passes its gradient and the other does not, and from that
step on the runs part (measured: the same job in one process with 2 and with 3 replicas parts
at step 892 of 2000, by 2e-4, and ends 0.5 apart). A run that lost or repeated rows, or
restarted a replica from the wrong state, differs otherwise: at the step of the failure, the
redo or the join, its loss moves by about |row loss - mean| / batch, typically 1e-2.

A step that a lost worker had computed (its update is in the survivors' weights) but whose
report never reached the coordinator is recorded with the parts that came: their mean loss,
and the rows the sum held (all of them, since the lost worker's rows travel with the sum; fewer
than the reference's before that). Workers report short steps a block at a time (up to 8), so
every step from the one the loss was noticed at up to the one the survivors redo may be such
a step; so may every step from it up to and including the checkpoint's step that a resumed run
starts after (the run that ended recorded it, with the parts that came; measured in CI: lost at
step 129, checkpoint after 134, step 134's loss 0.1 off and the resumed steps right). Those are left out of the comparison where their
loss differs (and named): the steps after them show whether the weights were right.

So: exit 0 when the final weights are within TOLERANCE (0: the same bit for bit), or when the per-step training losses
agree within TOLERANCE up to a step where they part by less than 1e-3 (a flip's signature);
else 1. At a failure's, a redo's, a join's or a resume's step and the one after, the bound is
1e-4: a flip there parts them by about 2e-5 (a flip hidden among the steps left out shows
first there), a lost or repeated row by 1e-2. Prints what it found.
"""
import json
import sys

from compare_weights import largest_difference

FLIP = 1e-3
FLIP_AT_EVENT = 1e-4


def losses_and_events(run):
    """Per step its loss and samples; the steps next to an event (a loss, a redo, a join, a
    resume: its step and the one after); every step from a loss to the redo or resume that
    follows it (whose reports the loss may have cut short: a redone step is recorded again, the
    step a resume starts after is not); and those two together."""
    steps, samples, at_event, cut = {}, {}, set(), set()
    lost_at = None
    with open(run + "/metrics.jsonl") as f:
        for line in f:
            record = json.loads(line)
            event = record.get("event")
            if event == "step":
                steps[record["step"]] = record["loss"]  # a redone step: its last record
                samples[record["step"]] = record["samples"]
            elif event in ("node_lost", "step_redone", "node_joined", "resumed"):
                at_event.update({record["step"], record["step"] + 1})
                if event == "node_lost":
                    lost_at = record["step"]
                elif event in ("step_redone", "resumed") and lost_at is not None:
                    cut.update(range(lost_at, record["step"] + (event == "resumed")))
                    lost_at = None
    return steps, samples, at_event, cut, cut | at_event


ref_run, run, tolerance = sys.argv[1], sys.argv[2], float(sys.argv[3])
worst, _ = largest_difference(ref_run, run)
if worst <= tolerance:
    print(f"max abs difference {worst:.3g}")
    sys.exit(0)
ref, ref_samples, _, _, _ = losses_and_events(ref_run)
got, got_samples, at_event, cut, touched = losses_and_events(run)
if ref.keys() != got.keys():
    print(f"max abs difference {worst:.3g}; steps recorded differ: "
          f"{sorted(set(ref) ^ set(got))[:10]}")
    sys.exit(1)
partial = sorted(s for s in touched & set(got)
                 if got_samples[s] < ref_samples[s] or (s in cut and abs(ref[s] - got[s]) > tolerance))
note = "".join(f"; step {s} may be recorded without a lost worker's part ({got_samples[s]} of "
               f"{ref_samples[s]} samples, loss {got[s]:.4g} for {ref[s]:.4g}), left out"
               for s in partial)
parted = next((s for s in sorted(ref) if s not in partial and abs(ref[s] - got[s]) > tolerance),
              None)
if parted is None:
    print(f"max abs difference {worst:.3g}, every step's loss within {tolerance}{note}")
    sys.exit(1)
jump = abs(ref[parted] - got[parted])
flip = jump < (FLIP_AT_EVENT if parted in at_event else FLIP)
verdict = "a ReLU flip" if flip else "not a float-order flip"
if tolerance == 0:  # bit for bit asked: the same sums in the same order, so no flip either
    flip, verdict = False, "bit for bit asked"
if parted in at_event:
    verdict += ": next to a failure, redo, join or resume"
print(f"max abs difference {worst:.3g}: losses within {tolerance} up to step {parted}, "
      f"where they part by {jump:.2g} ({verdict}){note}")
sys.exit(0 if flip else 1)
