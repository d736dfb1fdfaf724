#!/usr/bin/env bash
# End-to-end tests of the troupe program: help and exit codes, every config validates, bad job
# files and command lines (exit 2, the JSON path named), a short run leaves every output file,
# a failing worker and bad data files (exit 1, summary.json still written), and the weights
# load in PyTorch when /usr/bin/python3 has torch.
#   cli_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
source "$(dirname "$0")/../lib/harness.sh"
fashion=/usr/share/datasets/fashion-mnist

json_field() {  # json_field FILE KEY
  /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"
}

# --- command line ---------------------------------------------------------------------------
expect 0 "Usage" -- "$troupe" --help
expect 0 "--set" -- "$troupe" run --help
expect 0 "validate" -- "$troupe" validate --help
expect 2 "" -- "$troupe"
expect 2 "job" -- "$troupe" run
# A word that is no subcommand is named (CLI11 said "A subcommand is required").
expect 2 "error: trian is not a troupe subcommand (troupe help lists them)" -- "$troupe" trian
expect 2 "error: troupe takes a subcommand first, not '-x'" -- "$troupe" -x
expect 2 "error: troupe takes a subcommand first, not ''" -- "$troupe" ""
expect 2 "error: 'bogus' is not a troupe certs subcommand (troupe help certs lists them)" -- \
  "$troupe" certs bogus
expect 2 "error: troupe certs takes a subcommand" -- "$troupe" certs
expect 2 "error: troupe certs takes a subcommand first, not '--bogus'" -- "$troupe" certs --bogus
expect 0 "Subcommands:" -- "$troupe" certs --help
expect 0 "troupe" -- "$troupe" --version
expect 2 "--bogus" -- "$troupe" run "$root/configs/synthetic_smoke.json" --bogus
expect 2 "cannot open" -- "$troupe" validate "$tmp/missing.json"
expect 2 "longer than 64 MiB" -- "$troupe" validate /dev/zero
# A job through a pipe, as `troupe validate <(make-job)` gives it.
expect 0 "valid" -- bash -c "\"$troupe\" validate <(cat \"$root/configs/synthetic_smoke.json\")"

# --- every shipped config is valid ------------------------------------------------------------
for config in "$root"/configs/*.json; do
  expect 0 "valid" -- "$troupe" validate "$config"
done

# --- bad job files: every problem reported at once, each with its JSON path -----------------
cat >"$tmp/bad.json" <<'JSON'
{"name": "bad", "optimizer": {"type": "sgd", "lr": -0.1, "momentun": 0.9},
 "parallelism": {"replicas": "two"}, "training": {"epochs": 1, "steps": 5}}
JSON
expect 2 "/optimizer/lr: must be > 0, got -0.1" -- "$troupe" validate "$tmp/bad.json"
expect 2 "/optimizer/momentun" -- "$troupe" validate "$tmp/bad.json"
expect 2 "/parallelism/replicas" -- "$troupe" validate "$tmp/bad.json"
expect 2 "/training" -- "$troupe" run "$tmp/bad.json" --out "$tmp/never"
[ ! -e "$tmp/never" ] && pass || fail "a rejected job created its output folder"
# A Fashion-MNIST file with a bad header: run refuses it as validate does (it was planned with
# the published sizes, a folder made, and the run failed with exit 1).
mkdir "$tmp/fashion"
for f in train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  ln -s "/usr/share/datasets/fashion-mnist/$f.gz" "$tmp/fashion/"
done
printf 'not IDX' | gzip >"$tmp/fashion/train-images-idx3-ubyte.gz"
echo '{"name": "f", "data": {"path": "'$tmp'/fashion"}, "training": {"steps": 2}}' >"$tmp/fashion.json"
expect 2 "train-images-idx3-ubyte.gz: not an IDX file: bad magic number" -- "$troupe" run \
  "$tmp/fashion.json" --out "$tmp/never_fashion"
[ ! -e "$tmp/never_fashion" ] && pass || fail "a job with a bad data file created its output folder"
echo '{"optimizer": {"lr": 1e400}}' >"$tmp/huge_number.json"
expect 2 "huge_number.json: invalid JSON: number overflow parsing '1e400'" -- "$troupe" validate \
  "$tmp/huge_number.json"
echo '{"name": "a", "training": {"steps": 5, "steps": 6}}' >"$tmp/twice.json"
expect 2 "/training/steps: given twice" -- "$troupe" run "$tmp/twice.json" --out "$tmp/never2"
echo '{"model": {"hidden": [65536, 65536, 65536]}}' >"$tmp/huge_model.json"
expect 2 "/model: 8642166794 parameters" -- "$troupe" validate "$tmp/huge_model.json"
printf '{"name": "x",\n  "seed": 1,,\n}' >"$tmp/syntax.json"
expect 2 "syntax.json:2:" -- "$troupe" validate "$tmp/syntax.json"
expect 2 "/parallelism/replicas" -- "$troupe" validate "$root/configs/synthetic_smoke.json" \
  --set parallelism.replicas=0
expect 2 "--set seed.x=1" -- "$troupe" validate "$root/configs/synthetic_smoke.json" --set seed.x=1
expect 2 "PATH=VALUE" -- "$troupe" validate "$root/configs/synthetic_smoke.json" --set nonsense
# The node count --local-nodes sets is named as that option, not as a --set never given.
expect 2 "error: --local-nodes 9: /cluster/nodes: " -- "$troupe" run \
  "$root/configs/synthetic_smoke.json" --local-nodes 9 --out "$tmp/nine_nodes"
# A CPU build (this test's build) refuses a GPU job at plan time, before any output exists.
expect 2 "/device: asks for cuda:0, but this build of troupe has no CUDA" -- "$troupe" validate \
  "$root/configs/synthetic_smoke.json" --set device=cuda:0
expect 2 "/device: asks for cuda, but this build" -- "$troupe" run \
  "$root/configs/synthetic_smoke.json" --set device=cuda --out "$tmp/no_gpu"
[ ! -e "$tmp/no_gpu" ] && pass || fail "a GPU job on a CPU build created its output folder"
expect 2 '/device: must be "cpu", "cuda" or "cuda:N"' -- "$troupe" validate \
  "$root/configs/synthetic_smoke.json" --set device=gpu

# --- a short run leaves every output file -----------------------------------------------------
out="$tmp/run1"
expect 0 "outputs in $out" -- "$troupe" run "$root/configs/synthetic_smoke.json" --out "$out" \
  --set training.steps=40 --set parallelism.replicas=3 --set name=smoke
for f in job.json metrics.jsonl summary.json final_weights.pt; do
  [ -s "$out/$f" ] && pass || fail "run left no $f"
done
[ "$(json_field "$out/summary.json" status)" = succeeded ] && pass || fail "summary status"
[ "$(json_field "$out/summary.json" replicas)" = 3 ] && pass || fail "summary replicas"
/usr/bin/python3 - "$out" <<'PY' && pass || fail "resolved job.json / metrics.jsonl content"
import json, sys
run = sys.argv[1]
job = json.load(open(f"{run}/job.json"))
assert job["parallelism"]["replicas"] == 3 and job["training"]["steps"] == 40, job
assert job["name"] == "smoke" and job["optimizer"]["weight_decay"] == 0.0, job
events = [json.loads(line) for line in open(f"{run}/metrics.jsonl")]
steps = [e for e in events if e["event"] == "step"]
assert [e["step"] for e in steps] == list(range(40)), "one step record per step"
workers = {e["worker"] for e in events if e["event"] == "worker_step"}
assert workers == {0, 1, 2}, workers
assert sum(e["event"] == "eval" for e in events) == 1, "eval at step 40 (interval 50 > steps)"
summary = json.load(open(f"{run}/summary.json"))
for key in ("wall_s", "samples_per_s", "final_train_loss", "test_accuracy"):
    assert summary[key] is not None and summary[key] > 0, key
assert len(summary["workers"]) == 3
PY
expect 2 "not empty" -- "$troupe" run "$root/configs/synthetic_smoke.json" --out "$out"
expect 0 "succeeded" -- "$troupe" run "$root/configs/synthetic_smoke.json" --out "$out" --force \
  --set training.steps=5 --quiet
# --force into the job file's own folder would replace it with the resolved job (it did): refused,
# the file as it was; a job file of another name there is left alone, and the run goes on.
cp "$root/configs/synthetic_smoke.json" "$out/job.json"
cp "$out/job.json" "$tmp/job_before.json"
expect 2 "--out $out --force: would remove or overwrite the job file $out/job.json" -- \
  "$troupe" run "$out/job.json" --out "$out" --force --set training.steps=5
cmp -s "$out/job.json" "$tmp/job_before.json" && pass || fail "--force changed the job file"
cp "$root/configs/synthetic_smoke.json" "$out/mine.json"
expect 0 "succeeded" -- "$troupe" run "$out/mine.json" --out "$out" --force \
  --set training.steps=5 --quiet
[ -f "$out/mine.json" ] && pass || fail "--force removed a job file it does not write"
# One run in a folder at a time: while a run writes it, --force and --resume are refused (the
# second cleared the first's files under it; two resumes wrote one checkpoint twice).
"$troupe" run "$root/configs/synthetic_smoke.json" --out "$tmp/held" --quiet \
  --set training.steps=100000000 --set checkpoint.every_steps=1000 &
held=$!
for _ in $(seq 300); do [ -s "$tmp/held/metrics.jsonl" ] && break; sleep 0.1; done
held_message="another troupe run is writing to this folder now"
expect 2 "--out $tmp/held: $held_message" -- "$troupe" run "$root/configs/synthetic_smoke.json" \
  --out "$tmp/held" --force
expect 2 "--resume $tmp/held: $held_message" -- "$troupe" run --resume "$tmp/held"
kill -TERM $held
wait $held
grep -q '"error": "interrupted after' "$tmp/held/summary.json" && pass || fail "held: the first run's summary"
expect 2 "--resume $tmp/none: not a run folder (no such folder)" -- "$troupe" run --resume "$tmp/none"
# A resumed run continues in its folder: --out beside it was ignored, an empty --out chose the
# default folder.
expect 2 "--resume excludes --out" -- "$troupe" run --resume "$tmp/held" --out "$tmp/elsewhere"
expect 2 "--out: an empty folder name" -- "$troupe" run "$root/configs/synthetic_smoke.json" --out ""

# --- local SGD through the command line ---------------------------------------------------------
expect 0 "local_sgd (average every 4 steps" -- "$troupe" run "$root/configs/synthetic_smoke.json" \
  --out "$tmp/run_local" --set 'parallelism={"policy": "local_sgd", "period": 4, "replicas": 2}'
[ "$(json_field "$tmp/run_local/summary.json" status)" = succeeded ] && pass || fail "local_sgd run"
expect 0 "parameter server, max staleness 1" -- "$troupe" run "$root/configs/synthetic_smoke.json" \
  --out "$tmp/run_async" --set 'parallelism={"policy": "async", "max_staleness": 1, "replicas": 2}'
/usr/bin/python3 - "$tmp/run_async" <<'PY' && pass || fail "async outputs"
import json, sys
run = sys.argv[1]
s = json.load(open(f"{run}/summary.json"))
assert s["status"] == "succeeded" and sum(s["staleness_histogram"].values()) == 2 * 100, s
events = [json.loads(line) for line in open(f"{run}/metrics.jsonl")]
assert sum(e["event"] == "applied" for e in events) == 200
assert all("wait_fraction" in w for w in s["workers"])
PY

expect 0 "steps 0..19: sync, steps 20..49: local_sgd every 5" -- "$troupe" run \
  "$root/configs/synthetic_smoke.json" --out "$tmp/run_schedule" --set 'parallelism={"policy":
  "schedule", "replicas": 2, "phases": [{"policy": "sync", "steps": 20},
  {"policy": "local_sgd", "period": 5, "steps": 30}, {"policy": "sync"}]}'
grep -q '"event":"phase".*"step":50' "$tmp/run_schedule/metrics.jsonl" && pass || fail "schedule switch"
expect 2 "/parallelism/phases/1: would start at step 100" -- "$troupe" validate \
  "$root/configs/synthetic_smoke.json" --set 'parallelism={"policy": "schedule",
  "phases": [{"policy": "sync", "steps": 100}, {"policy": "local_sgd"}]}'

# --- pipelines: the plan, per-stage metrics, and splits that cannot work ------------------------
out="$tmp/run_pipeline"
expect 0 "predicted bubble 20%" -- "$troupe" run "$root/configs/synthetic_smoke.json" --out "$out" \
  --set 'parallelism={"replicas": 1, "stages": 2, "micro_batches": 4, "schedule": "gpipe"}'
grep -q '"event":"stage_step".*"peak_live_activations":4' "$out/metrics.jsonl" && pass ||
  fail "pipeline: no stage_step record with gpipe's 4 live activations"
[ "$(json_field "$out/summary.json" stages)" = 2 ] && pass || fail "pipeline: summary stages"
json_field "$out/summary.json" bubble_fraction >/dev/null && pass || fail "pipeline: bubble"
expect 2 "/parallelism/stages: 3 stages, but the model has only 2 layers with parameters" -- \
  "$troupe" validate "$root/configs/synthetic_smoke.json" --set parallelism.stages=3
expect 2 "/parallelism/split/0: no layer \"fc7\"" -- "$troupe" validate \
  "$root/configs/synthetic_smoke.json" --set 'parallelism.stages=2' --set 'parallelism.split=["fc7"]'
expect 2 "/parallelism/policy: must be \"sync\"" -- "$troupe" validate \
  "$root/configs/synthetic_smoke.json" --set 'parallelism={"policy": "async", "stages": 2}'
expect 1 "stage 1 of replica 1 (worker 3) failed" -- "$troupe" run \
  "$root/configs/synthetic_smoke.json" --out "$tmp/run_stage_fault" \
  --set 'parallelism={"replicas": 2, "stages": 2, "micro_batches": 2}' \
  --set 'faults={"throw_worker": 3, "throw_step": 2}'
[ "$(json_field "$tmp/run_stage_fault/summary.json" status)" = failed ] && pass ||
  fail "stage fault: summary status"

# --- stacked ensembles: members exported, bad keys refused ---------------------------------------
out="$tmp/run_ensemble_smoke"
expect 0 "ensemble: 3 members stacked" -- "$troupe" run "$root/configs/synthetic_smoke.json" \
  --out "$out" --set parallelism.replicas=1 --set 'ensemble={"members": 3, "lrs": [0.01, 0.05, 0.1]}'
[ -f "$out/member_2.pt" ] && [ ! -e "$out/member_3.pt" ] && pass || fail "ensemble: member files"
grep -q '"event":"member_eval"' "$out/metrics.jsonl" && pass || fail "ensemble: member_eval"
expect 2 "/ensemble: runs as one stacked model on one worker" -- "$troupe" validate \
  "$root/configs/synthetic_smoke.json" --set 'ensemble={"members": 2}'
expect 2 "/ensemble/lrs: must be an array of exactly 2 numbers" -- "$troupe" validate \
  "$root/configs/synthetic_smoke.json" --set parallelism.replicas=1 \
  --set 'ensemble={"members": 2, "lrs": [0.1]}'

# --- failures: exit 1, summary.json says failed and why ----------------------------------------
out="$tmp/run_fault"
expect 1 "worker 1 failed" -- "$troupe" run "$root/configs/synthetic_smoke.json" --out "$out" \
  --set 'faults={"throw_worker": 1, "throw_step": 3}'
[ "$(json_field "$out/summary.json" status)" = failed ] && pass || fail "fault: summary status"
grep -q "mat1 and mat2" "$out/summary.json" && pass || fail "fault: cause not in summary"
[ ! -e "$out/final_weights.pt" ] && pass || fail "fault: weights written for a failed run"

# Missing data is refused before anything runs (a truncated file is found only as it loads).
expect 2 "$tmp/nodata/train-images-idx3-ubyte.gz: cannot open it" -- "$troupe" run \
  "$root/configs/fashion_mlp_sync.json" --out "$tmp/run_nodata" --set "data.path=\"$tmp/nodata\""
[ ! -e "$tmp/run_nodata" ] && pass || fail "a job without its data created its output folder"

if [ -d "$fashion" ]; then
  mkdir -p "$tmp/truncated"
  cp "$fashion"/*.gz "$tmp/truncated/"
  head -c 100000 "$fashion/train-images-idx3-ubyte.gz" >"$tmp/truncated/train-images-idx3-ubyte.gz"
  expect 1 "train-images-idx3-ubyte.gz" -- "$troupe" run "$root/configs/fashion_mlp_sync.json" \
    --out "$tmp/run_truncated" --set "data.path=\"$tmp/truncated\""

  # --- weights as PyTorch sees them ------------------------------------------------------------
  out="$tmp/run_fashion"
  expect 0 "succeeded" -- "$troupe" run "$root/configs/fashion_mlp_sync.json" --out "$out" \
    --set training.epochs=1 --quiet
  if /usr/bin/python3 -c "import torch" 2>/dev/null; then
    expect 0 "load strictly" -- /usr/bin/python3 "$here/../python/check_weights.py" "$out" \
      --evaluate "$fashion"
    out="$tmp/run_cnn"
    expect 0 "succeeded" -- "$troupe" run "$root/configs/fashion_cnn_sync.json" --out "$out" \
      --set 'training={"steps": 20, "batch_size": 64}' --quiet
    expect 0 "load strictly" -- /usr/bin/python3 "$here/../python/check_weights.py" "$out"
    # A pipelined CNN (3 stages, hybrid with 2 replicas) saves the same module tree.
    out="$tmp/run_cnn_pipeline"
    expect 0 "succeeded" -- "$troupe" run "$root/configs/fashion_cnn_pipeline.json" --out "$out" \
      --set 'training={"steps": 20, "batch_size": 64}' --set parallelism.stages=3 \
      --set parallelism.replicas=2 --quiet
    expect 0 "load strictly" -- /usr/bin/python3 "$here/../python/check_weights.py" "$out" \
      --evaluate "$fashion"
    # A stacked ensemble of 3 CNNs: every member is a standard state dict with its own accuracy.
    out="$tmp/run_ensemble"
    expect 0 "ensemble of 3" -- "$troupe" run "$root/configs/fashion_cnn_sync.json" --out "$out" \
      --set 'training={"steps": 30, "batch_size": 64}' --set parallelism.replicas=1 \
      --set 'ensemble={"members": 3}' --quiet
    for k in 0 2; do
      expect 0 "load strictly" -- /usr/bin/python3 "$here/../python/check_weights.py" "$out" \
        --member $k --evaluate "$fashion"
    done
  else
    echo "SKIP: /usr/bin/python3 has no torch; weights not checked in PyTorch"
  fi
else
  echo "SKIP: $fashion is absent; Fashion-MNIST runs not checked"
fi

report cli_test
