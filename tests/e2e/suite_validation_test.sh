#!/usr/bin/env bash
# End-to-end test of suites that tune on a validation set: a 3 settings x 3 seeds sweep with a
# validation split is ranked by validation accuracy (checked against the jobs' own summaries)
# and reports per setting the mean and standard deviation of every figure, equal to what Python
# computes from the nine summaries; stop_losers stops a hopeless job (status stopped) while the
# suite still exits 0; stop_losers without a validation set is refused.
#   suite_validation_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
source "$(dirname "$0")/../lib/harness.sh"
check() {  # check FOLDER DESCRIPTION PYTHON-EXPRESSION: s (summary), b (leaderboard), jobs, own
  if /usr/bin/python3 - "$1" "$3" <<'PY'; then pass; else fail "$2"; fi
import json, math, statistics, sys
folder, expression = sys.argv[1], sys.argv[2]
s = json.load(open(f"{folder}/summary.json"))
b = json.load(open(f"{folder}/leaderboard.json"))
jobs = {j["name"]: j for j in s["jobs"]}
own = {n: json.load(open(f"{folder}/{n}/summary.json")) for n in jobs}  # each job's own summary

def close(x, y):
    return (x is None and y is None) or (
        x is not None and y is not None and abs(x - y) <= 1e-9 * max(1.0, abs(y)))

def setting_matches(setting):
    # Every figure's mean and sample std over the setting's jobs, from the jobs' own summaries
    # (wall_s: the runner's, from the suite summary).
    names = setting["jobs"]
    for figure in ["validation_loss", "validation_accuracy", "test_loss", "test_accuracy",
                   "final_train_loss", "samples_per_s", "wall_s"]:
        xs = [(jobs if figure == "wall_s" else own)[n][figure] for n in names]
        if not close(setting[figure]["mean"], statistics.mean(xs)):
            print(figure, "mean", setting[figure]["mean"], statistics.mean(xs))
            return False
        if not close(setting[figure]["std"], statistics.stdev(xs)):
            print(figure, "std", setting[figure]["std"], statistics.stdev(xs))
            return False
    return True

ok = eval(expression)
if not ok:
    print(json.dumps(b, indent=1)[:3000])
sys.exit(0 if ok else 1)
PY
}

# ---- 3 settings x 3 seeds, ranked by validation ----------------------------------------------
cat >"$tmp/seeds.json" <<'JSON'
{
  "name": "seeds",
  "model": {"type": "mlp", "hidden": [16], "activation": "tanh"},
  "data": {"type": "synthetic", "train_samples": 512, "test_samples": 256, "noise": 8.0,
           "validation": 0.25},
  "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
  "training": {"steps": 30, "batch_size": 32, "eval_interval": 10},
  "devices": [{"device": "cpu", "threads": 2}],
  "sweep": {"optimizer.lr": [0.001, 0.01, 0.1], "seed": [1, 2, 3]}
}
JSON
out=$(timeout 300 "$troupe" run "$tmp/seeds.json" --out "$tmp/seeds" 2>&1)
status=$?
[ $status -eq 0 ] && pass || fail "seed sweep should exit 0, got $status: $out"
grep -qF "mean ± std" <<<"$out" && pass || fail "the table has no setting rows: $out"
check "$tmp/seeds" "all nine succeed, with validation and test figures" \
  'len(jobs) == 9 and all(j["status"] == "succeeded" and j["validation_accuracy"] is not None and j["test_accuracy"] is not None for j in jobs.values())'
check "$tmp/seeds" "the leaderboard says it ranks by validation accuracy" \
  'b["ranked_by"] == "validation_accuracy" and s["ranked_by"] == "validation_accuracy"'
check "$tmp/seeds" "leaderboard rows carry the jobs' own validation and test figures" \
  'all(close(e["validation_accuracy"], own[e["name"]]["validation_accuracy"]) and close(e["test_accuracy"], own[e["name"]]["test_accuracy"]) and close(e["test_loss"], own[e["name"]]["test_loss"]) for e in b["jobs"])'
check "$tmp/seeds" "leaderboard order is by validation accuracy, then lower validation loss" \
  '[e["rank"] for e in b["jobs"]] == list(range(1, 10)) and [e["name"] for e in b["jobs"]] == sorted(own, key=lambda n: (-own[n]["validation_accuracy"], own[n]["validation_loss"]))'
check "$tmp/seeds" "three settings of three seeds each, seed left out of their overrides" \
  'len(s["settings"]) == 3 and all(len(t["jobs"]) == 3 and t["succeeded"] == 3 and list(t["overrides"]) == ["optimizer.lr"] for t in s["settings"]) and sorted(t["overrides"]["optimizer.lr"] for t in s["settings"]) == [0.001, 0.01, 0.1]'
check "$tmp/seeds" "each setting's jobs share its learning rate" \
  'all(jobs[n]["overrides"]["optimizer.lr"] == t["overrides"]["optimizer.lr"] for t in s["settings"] for n in t["jobs"])'
check "$tmp/seeds" "mean and std of every figure match Python on the jobs' summaries (1e-9)" \
  'all(setting_matches(t) for t in s["settings"])'
check "$tmp/seeds" "settings are ranked by mean validation accuracy, the same in both files" \
  'b["settings"] == s["settings"] and [t["rank"] for t in s["settings"]] == [1, 2, 3] and all(x["validation_accuracy"]["mean"] >= y["validation_accuracy"]["mean"] for x, y in zip(s["settings"], s["settings"][1:]))'

# ---- stop_losers: a job that cannot catch the leader stops ------------------------------------
cat >"$tmp/losers.json" <<'JSON'
{
  "name": "losers",
  "model": {"type": "mlp", "hidden": [16]},
  "data": {"type": "synthetic", "train_samples": 512, "test_samples": 128, "validation": 0.25},
  "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
  "training": {"steps": 40, "batch_size": 32, "eval_interval": 5},
  "devices": [{"device": "cpu", "threads": 2}],
  "stop_losers": {"after": 2},
  "jobs": [
    {"name": "leader"},
    {"name": "hopeless", "optimizer": {"lr": 1e-7, "momentum": 0},
     "training": {"steps": 1000000}, "limits": {"time_s": 120}}
  ]
}
JSON
out=$(timeout 300 "$troupe" run "$tmp/losers.json" --out "$tmp/losers" 2>&1)
status=$?
[ $status -eq 0 ] && pass || fail "a suite with a stopped job should exit 0, got $status: $out"
check "$tmp/losers" "the leader succeeds, the hopeless job is stopped by the rule" \
  'jobs["leader"]["status"] == "succeeded" and jobs["hopeless"]["status"] == "stopped" and jobs["hopeless"]["error"].startswith("stopped by stop_losers after 2 evaluations: validation accuracy ") and " < median " in jobs["hopeless"]["error"]'
check "$tmp/losers" "the job's own summary says it was stopped, and why" \
  'own["hopeless"]["status"] == "stopped" and own["hopeless"]["error"] == jobs["hopeless"]["error"]'
check "$tmp/losers" "the suite succeeded; the stopped job is listed after the ranked one" \
  's["status"] == "succeeded" and [(e["name"], e["rank"]) for e in b["jobs"]] == [("leader", 1), ("hopeless", None)]'
check "$tmp/losers" "the stopped job was well short of its time limit" 'jobs["hopeless"]["wall_s"] < 100'
grep -qE "  stopped by stop_losers after 2 evaluations" <<<"$out" && pass || fail "the table: $out"

# ---- asha: the first job at a rung goes on; one below the rung's top half stops ----------------
# One job at a time, so the order in which jobs reach the rung is the file's.
cat >"$tmp/asha.json" <<'JSON'
{
  "name": "asha",
  "model": {"type": "mlp", "hidden": [16]},
  "data": {"type": "synthetic", "train_samples": 512, "test_samples": 128, "validation": 0.25},
  "optimizer": {"type": "sgd", "lr": 0.1, "momentum": 0.9},
  "training": {"steps": 40, "batch_size": 32, "eval_interval": 5},
  "devices": [{"device": "cpu", "threads": 2}], "max_concurrent": 1,
  "asha": {"min_steps": 10, "reduction": 2},
  "jobs": [
    {"name": "leader"},
    {"name": "hopeless", "optimizer": {"lr": 1e-7, "momentum": 0},
     "training": {"steps": 1000000}, "limits": {"time_s": 120}}
  ]
}
JSON
out=$(timeout 300 "$troupe" validate "$tmp/asha.json" 2>&1)
grep -qF "asha from 10 steps keeping 1/2 at each rung" <<<"$out" && pass || fail "asha plan: $out"
out=$(timeout 300 "$troupe" run "$tmp/asha.json" --out "$tmp/asha" 2>&1)
status=$?
[ $status -eq 0 ] && pass || fail "a suite with a job asha stopped should exit 0, got $status: $out"
check "$tmp/asha" "the leader succeeds, the hopeless job is stopped at the first rung" \
  'jobs["leader"]["status"] == "succeeded" and jobs["hopeless"]["status"] == "stopped" and jobs["hopeless"]["error"].startswith("stopped by asha at the rung of 10 steps: validation accuracy ") and jobs["hopeless"]["wall_s"] < 100'

# A base key a --set wrote, found bad in each entry, is that --set's (it named the file).
expect 2 "error: --set retries=101: /jobs/0/retries: must be an integer from 0 to 100" -- \
  "$troupe" validate "$tmp/asha.json" --set retries=101
# So is a job's key it wrote into the base, unless the job's entry gives the key itself.
expect 2 "error: --set training.steps=-1: job leader (/jobs/0): /training/steps: must be" -- \
  "$troupe" validate "$tmp/asha.json" --set training.steps=-1
lacks "job hopeless" -- "$troupe" validate "$tmp/asha.json" --set training.steps=-1
/usr/bin/python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); s["jobs"][1]["optimizer"]["lr"] = -1; json.dump(s, open(sys.argv[2], "w"))' "$tmp/asha.json" "$tmp/own_lr.json"
expect 2 "error: $tmp/own_lr.json: job hopeless (/jobs/1): /optimizer/lr: must be" -- \
  "$troupe" validate "$tmp/own_lr.json" --set optimizer.lr=0.2
# An entry's key a --set wrote is that --set's; a value the search drew is the file's.
expect 2 "error: --set jobs.0.optimizer.lr=-1: job leader (/jobs/0): /optimizer/lr: must be" -- \
  "$troupe" validate "$tmp/asha.json" --set jobs.0.optimizer.lr=-1
echo '{"data": {"type": "synthetic"}, "search": {"trials": 2, "space": {"optimizer.momentum": {"uniform": [1.5, 2]}}}}' >"$tmp/drawn.json"
expect 2 "error: $tmp/drawn.json: job " -- "$troupe" validate "$tmp/drawn.json" \
  --set optimizer.momentum=0.5
# A first rung beyond every job's end stopped nothing, without a word.
expect 2 "/asha/min_steps: 2000000 steps, not fewer than the longest job's 1000000" -- \
  "$troupe" validate "$tmp/asha.json" --set asha.min_steps=2000000

# ---- stop_losers refused without a validation set, or with a bad K ----------------------------
echo '{"sweep": {"seed": [1, 2]}, "data": {"type": "synthetic"}, "stop_losers": {"after": 2}}' \
  >"$tmp/nosplit.json"
out=$(timeout 60 "$troupe" validate "$tmp/nosplit.json" 2>&1)
[ $? -eq 2 ] && grep -qF "/stop_losers: needs every job to hold out a validation set" <<<"$out" &&
  pass || fail "stop_losers without a validation set: $out"
echo '{"sweep": {"seed": [1, 2]}, "data": {"type": "synthetic", "validation": 0.1}, "stop_losers": {"after": 0}}' \
  >"$tmp/bad_k.json"
out=$(timeout 60 "$troupe" run "$tmp/bad_k.json" --out "$tmp/bad_k" 2>&1)
[ $? -eq 2 ] && grep -qF "/stop_losers/after: must be an integer" <<<"$out" && [ ! -e "$tmp/bad_k" ] &&
  pass || fail "stop_losers with after 0: $out"

report suite_validation_test
