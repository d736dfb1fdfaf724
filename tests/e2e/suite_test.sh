#!/usr/bin/env bash
# End-to-end test of suites: several jobs from one file run as child processes, two at a time on
# a 2-thread cpu device; a job that throws, one over its memory limit and one over its time
# budget fail with their cause while the others finish; the leaderboard ranks the survivors;
# a job killed mid-run is retried from its newest checkpoint; bad suites are refused before
# anything runs.
#   suite_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
source "$(dirname "$0")/../lib/harness.sh"
check() {  # check DESCRIPTION PYTHON-EXPRESSION-ON-s (the suite summary) and b (leaderboard)
  if /usr/bin/python3 - "$tmp/out" "$2" <<'PY'; then pass; else fail "$1"; fi
import json, sys
folder, expression = sys.argv[1], sys.argv[2]
s = json.load(open(f"{folder}/summary.json"))
b = json.load(open(f"{folder}/leaderboard.json"))
jobs = {j["name"]: j for j in s["jobs"]}
sys.exit(0 if eval(expression) else 1)
PY
}

cat >"$tmp/suite.json" <<'JSON'
{
  "name": "e2e",
  "model": {"type": "mlp", "hidden": [32], "activation": "tanh"},
  "data": {"type": "synthetic", "train_samples": 1024, "test_samples": 256},
  "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
  "training": {"steps": 60, "batch_size": 32, "eval_interval": 30},
  "devices": [{"device": "cpu", "threads": 2}],
  "jobs": [
    {"name": "plain"},
    {"name": "broken", "faults": {"throw_worker": 0, "throw_step": 5}},
    {"name": "hog", "training": {"steps": 1000000}, "limits": {"memory_mb": 40, "time_s": 100}},
    {"name": "slow", "training": {"steps": 1000000}, "limits": {"time_s": 2}},
    {"name": "wide", "model": {"hidden": [128]}}
  ],
  "sweep": {"seed": [1, 2]}
}
JSON

out=$(timeout 300 "$troupe" validate "$tmp/suite.json" 2>&1)
[ $? -eq 0 ] && grep -qF "10 job(s) (5 entries x 2 sweep combinations)" <<<"$out" && pass ||
  fail "validate suite: $out"
# max_concurrent says 10, the 2 threads fit 2 jobs of 1 thread: the plan says so, and why.
grep -qF "at most 10 at once (2 at the start: the devices' threads fit 2 of these jobs" <<<"$out" &&
  pass || fail "validate suite does not say how many start together: $out"

out=$(timeout 300 "$troupe" run "$tmp/suite.json" --out "$tmp/out" 2>&1)
status=$?
[ $status -eq 1 ] && pass || fail "suite with failing jobs should exit 1, got $status: $out"
grep -qF "6 of 10 jobs did not succeed" <<<"$out" && pass || fail "count of failures: $out"
check "plain and wide succeed" \
  'all(jobs[n]["status"] == "succeeded" for n in ["plain-seed=1", "plain-seed=2", "wide-seed=1", "wide-seed=2"])'
check "broken fails with its cause" \
  '"mat1 and mat2 shapes" in jobs["broken-seed=1"]["error"] and jobs["broken-seed=2"]["status"] == "failed"'
check "hog is stopped over its memory limit" '"over its memory limit" in jobs["hog-seed=1"]["error"]'
check "slow is stopped over its time budget" \
  '"over its wall-time budget of 2 s" in jobs["slow-seed=2"]["error"]'
check "leaderboard ranks the four that succeeded first, by test accuracy (no validation sets)" \
  '[e["rank"] for e in b["jobs"][:4]] == [1, 2, 3, 4] and all(e["rank"] is None for e in b["jobs"][4:]) and b["ranked_by"] == "test_accuracy"'
check "jobs that differ only in seed form settings" \
  'len(b["settings"]) == 5 and s["settings"] == b["settings"] and b["settings"][0]["succeeded"] == 2'
check "suite status failed" 's["status"] == "failed"'
for job in plain-seed=1 wide-seed=2; do
  [ -f "$tmp/out/$job/final_weights.pt" ] && [ -f "$tmp/out/$job/metrics.jsonl" ] && pass ||
    fail "$job: outputs missing"
done
/usr/bin/python3 -c 'import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s["status"]=="failed" and "memory" in s["error"] else 1)' \
  "$tmp/out/hog-seed=1/summary.json" && pass || fail "hog-seed=1/summary.json does not say why"

# Every job succeeding: exit 0.
cat >"$tmp/ok.json" <<'JSON'
{"name": "ok", "data": {"type": "synthetic", "train_samples": 512, "test_samples": 128},
 "model": {"hidden": [16]}, "training": {"steps": 20, "batch_size": 32},
 "sweep": {"optimizer.lr": [0.01, 0.1]}, "max_concurrent": 1}
JSON
out=$(timeout 300 "$troupe" run "$tmp/ok.json" --out "$tmp/ok" 2>&1)
[ $? -eq 0 ] && pass || fail "all-succeeding suite: $out"

# A job whose process is killed (SIGKILL, after its first checkpoint) is started again from its
# newest checkpoint (jobs[i].retries) and ends with the weights of a run never interrupted.
cat >"$tmp/retry.json" <<'JSON'
{"name": "retry", "data": {"type": "synthetic", "train_samples": 1024, "test_samples": 128},
 "model": {"hidden": [16]}, "training": {"steps": 300, "batch_size": 32, "eval_interval": 100},
 "checkpoint": {"every_steps": 20}, "faults": {"slow_worker": 0, "slow_ms": 5},
 "jobs": [{"name": "victim", "retries": 1}]}
JSON
timeout 300 "$troupe" run "$tmp/retry.json" --out "$tmp/retry" >"$tmp/retry.log" 2>&1 &
suite_pid=$!
deadline=$((SECONDS + 120))
while [ ! -f "$tmp/retry/victim/checkpoints/latest" ] && [ $SECONDS -lt $deadline ]; do sleep 0.05; done
pkill -KILL -f "$tmp/retry/specs/victim.json" && pass || fail "no victim process to kill"
wait $suite_pid
status=$?
[ $status -eq 0 ] && grep -qF "retrying victim (1 of 1) from its newest checkpoint" "$tmp/retry.log" &&
  pass || fail "retried suite exited $status: $(cat "$tmp/retry.log")"
/usr/bin/python3 -c 'import json,sys; j=json.load(open(sys.argv[1]))["jobs"][0]; sys.exit(0 if j["status"]=="succeeded" and j["retries"]==1 else 1)' \
  "$tmp/retry/summary.json" && pass || fail "summary.json of the retried suite: $(cat "$tmp/retry/summary.json")"
timeout 120 "$troupe" run "$tmp/retry/specs/victim.json" --out "$tmp/victim-full" --quiet >/dev/null 2>&1
cmp -s "$tmp/victim-full/final_weights.pt" "$tmp/retry/victim/final_weights.pt" && pass ||
  fail "the retried job's weights differ from an uninterrupted run's"

# Ctrl-C reaches the suite's whole process group (setsid gives it one, as a terminal would): the
# jobs it reaches are stopped with the suite, none failed (jobs still starting, before their own
# handler, were listed failed, "killed by signal 2 without a summary"), and the suite exits 130.
cat >"$tmp/many.json" <<'JSON'
{"name": "many", "model": {"type": "mlp", "hidden": [8]},
 "data": {"type": "synthetic", "train_samples": 256, "test_samples": 64},
 "training": {"steps": 2000, "batch_size": 32}, "sweep": {"seed": [1, 2, 3, 4, 5, 6, 7, 8]}}
JSON
setsid "$troupe" run "$tmp/many.json" --out "$tmp/many" --quiet >"$tmp/many.log" 2>&1 &
many=$!
for _ in $(seq 100); do [ -n "$(ls "$tmp/many/logs" 2>/dev/null)" ] && break; sleep 0.1; done
sleep 0.3
kill -INT -- -$many
wait $many
status=$?
[ $status -eq 130 ] && pass || fail "an interrupted suite exited $status: $(tail -5 "$tmp/many.log")"
/usr/bin/python3 - "$tmp/many/summary.json" <<'PY' && pass || fail "interrupted suite: $(cat "$tmp/many/summary.json")"
import json, sys
summary = json.load(open(sys.argv[1]))
jobs = summary["jobs"]
print({j["name"]: (j["status"], j.get("error")) for j in jobs})
assert summary["status"] == "stopped", summary["status"]  # it said "succeeded"
assert not any(j["status"] == "failed" for j in jobs)
assert any(j["status"] == "stopped" for j in jobs)
PY
# It says how its jobs ended ("1 of 8 jobs did not succeed" counted the unstarted only), after
# the table, and no job folder keeps the reserve of a summary the runner wrote for it.
grep -qE "error: the suite was interrupted: of 8 jobs, [0-9] succeeded, [1-8] stopped" \
  "$tmp/many.log" && pass || fail "interrupted suite's count: $(tail -3 "$tmp/many.log")"
[ -z "$(find "$tmp/many" -name .summary-space)" ] && pass ||
  fail "reserves left: $(find "$tmp/many" -name .summary-space)"

# A suite runner killed with SIGKILL takes its jobs with it: the kernel sends each SIGTERM, and it
# stops as after Ctrl-C. They ran on to their end, unwatched, re-parented to init.
"$troupe" run "$tmp/many.json" --out "$tmp/killed" --quiet >"$tmp/killed.log" 2>&1 &
runner=$!
for _ in $(seq 100); do [ -n "$(ls "$tmp/killed/logs" 2>/dev/null)" ] && break; sleep 0.1; done
sleep 0.3
kill -9 $runner
wait $runner 2>/dev/null
for _ in $(seq 100); do pgrep -f "$tmp/killed/specs" >/dev/null || break; sleep 0.1; done
! pgrep -f "$tmp/killed/specs" >/dev/null && pass ||
  fail "jobs outlived their killed runner: $(pgrep -af "$tmp/killed/specs")"
# Run again with --force, every job starts anew in its folder (it refused the folders the run
# before left, exit 2, and the table showed that run's figures as this one's).
timeout 300 "$troupe" run "$tmp/many.json" --out "$tmp/killed" --force --quiet \
  --set training.steps=20 >"$tmp/forced.log" 2>&1 && pass ||
  fail "--force over a killed suite: $(tail -5 "$tmp/forced.log")"

# A trial whose loss diverges is listed as diverged, unranked and not retried; the suite succeeds.
cat >"$tmp/div.json" <<'JSON'
{"name": "div", "data": {"type": "synthetic"}, "training": {"steps": 40},
 "jobs": [{"name": "calm"}, {"name": "wild", "optimizer": {"lr": 1e9}, "retries": 2}]}
JSON
timeout 120 "$troupe" run "$tmp/div.json" --out "$tmp/div" --quiet >"$tmp/div.log" 2>&1
status=$?
[ $status -eq 0 ] && ! grep -qF "retrying wild" "$tmp/div.log" && pass ||
  fail "a suite with a diverged trial exited $status: $(cat "$tmp/div.log")"
/usr/bin/python3 -c 'import json,sys; j={x["name"]: x for x in json.load(open(sys.argv[1]))["jobs"]}; sys.exit(0 if j["wild"]["status"]=="diverged" and "loss is" in j["wild"]["error"] and j["calm"]["status"]=="succeeded" else 1)' \
  "$tmp/div/summary.json" && pass || fail "summary.json of the diverged suite: $(cat "$tmp/div/summary.json")"
"$troupe" run "$tmp/div/specs/wild.json" --out "$tmp/wild" --quiet >"$tmp/wild.log" 2>&1
status=$?
[ $status -eq 1 ] && grep -qF "error: run diverged: " "$tmp/wild.log" && pass ||
  fail "a diverged run exited $status: $(cat "$tmp/wild.log")"

# Random search: 3 trials drawn from the seed, each a job whose job.json holds its draws.
cat >"$tmp/search.json" <<'JSON'
{"name": "rs", "seed": 4,
 "model": {"type": "mlp", "hidden": [16]},
 "data": {"type": "synthetic", "train_samples": 256, "test_samples": 64},
 "training": {"steps": 10, "batch_size": 32},
 "devices": [{"device": "cpu", "threads": 2}],
 "search": {"trials": 3, "space": {"optimizer.lr": {"log_uniform": [0.001, 0.1]},
                                   "training.batch_size": {"int": [16, 32]}}}}
JSON
out=$(timeout 120 "$troupe" validate "$tmp/search.json" 2>&1)
[ $? -eq 0 ] && grep -qF "3 job(s) (1 entry x 3 search trial(s))" <<<"$out" && pass ||
  fail "validate search: $out"
out=$(timeout 300 "$troupe" run "$tmp/search.json" --out "$tmp/search" 2>&1)
[ $? -eq 0 ] && pass || fail "search suite: $out"
/usr/bin/python3 - "$tmp/search" <<'PY' && pass || fail "search jobs do not hold their draws"
import json, sys
board = json.load(open(f"{sys.argv[1]}/leaderboard.json"))
lrs = set()
for row in board["jobs"]:
    job = json.load(open(f"{sys.argv[1]}/{row['name']}/job.json"))
    assert job["optimizer"]["lr"] == row["overrides"]["optimizer.lr"], (job, row)
    # Named by its draws, as Python's format spells 4 significant digits.
    name = f"rs-lr={job['optimizer']['lr']:.4g},batch_size={job['training']['batch_size']}"
    assert row["name"] == name, (row["name"], name)
    assert 0.001 <= job["optimizer"]["lr"] <= 0.1
    assert 16 <= job["training"]["batch_size"] <= 32
    lrs.add(job["optimizer"]["lr"])
assert len(lrs) == 3, lrs
PY

# Refused before anything runs.
echo '{"jobs": [{"name": "a", "optimizer": {"lr": -1}}, {"name": "a"}]}' >"$tmp/bad.json"
out=$(timeout 60 "$troupe" run "$tmp/bad.json" --out "$tmp/bad" 2>&1)
[ $? -eq 2 ] && grep -qF "job a (/jobs/0): /optimizer/lr" <<<"$out" && [ ! -e "$tmp/bad" ] && pass ||
  fail "bad suite: $out"
echo '{"devices": [{"device": "cpu", "threads": 1}], "jobs": [{"name": "big", "parallelism": {"replicas": 2}}]}' >"$tmp/big.json"
out=$(timeout 60 "$troupe" validate "$tmp/big.json" 2>&1)
[ $? -eq 2 ] && grep -qF "job big: needs 2 threads on cpu" <<<"$out" && pass ||
  fail "job that fits nowhere: $out"

report suite_test
