#!/usr/bin/env bash
# Targets other than class labels, and tables: training.loss mse, l1 and bce_with_logits on
# float targets; data.type csv (libcsv) for regression and classification, trained by the
# built-in mlp on rows of any width; every figure summary.json reports is recomputed in PyTorch
# from the saved weights; a suite of regression jobs is ranked, and stopped, by validation loss;
# every bad table is refused before anything runs (exit 2, naming the file, the line and the
# column; no folder). Skips (77) where /usr/bin/python3 lacks torch.
#   table_data_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"
py=/usr/bin/python3
require_python_torch
$py "$here/../python/make_table_files.py" "$tmp" || fail "making files"

job() {  # job NAME DATA_JSON LOSS: a job file $tmp/NAME.json
  cat >"$tmp/$1.json" <<JSON
{"name": "$1", "seed": 3, "model": {"type": "mlp", "hidden": [32]},
 "data": $2,
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 300, "batch_size": 50, "eval_interval": 100, "loss": "$3"},
 "parallelism": {"policy": "sync", "replicas": 2}}
JSON
}
figure() {  # figure RUN KEY: a number from summary.json
  $py -c "import json,sys; print(json.load(open(sys.argv[1]+'/summary.json'))[sys.argv[2]])" "$1" "$2"
}
below() {  # below WHAT VALUE BOUND
  $py -c "import sys; sys.exit(0 if float(sys.argv[1]) < float(sys.argv[2]) else 1)" "$2" "$3" &&
    pass || fail "$1: $2 is not below $3"
}
# Training learned: the last evaluation's figure (mse or mae: the loss itself) is below half the
# mean loss of the first 5 steps.
falls() {  # falls RUN KEY
  $py - "$1/metrics.jsonl" "$2" <<'PY' && pass || fail "$1: $2 did not fall"
import json, sys
records = [json.loads(line) for line in open(sys.argv[1])]
first = [r["loss"] for r in records if r.get("event") == "step"][:5]
last = [r[sys.argv[2]] for r in records if sys.argv[2] in r][-1]
print(f"first steps' loss {sum(first) / len(first):.4g}, last {sys.argv[2]} {last:.4g}")
sys.exit(0 if last < 0.5 * sum(first) / len(first) else 1)
PY
}
in_pytorch() {  # in_pytorch RUN: summary.json's test figures recomputed in PyTorch
  $py "$here/../python/check_targets_run.py" "$1" && pass || fail "$1: PyTorch disagrees"
}

# Regression on a CSV table: the target column "price" sits among the features.
reg='{"type": "csv", "train": "'$tmp'/reg_train.csv", "test": "'$tmp'/reg_test.csv", "label": "price"}'
job reg "$reg" mse
expect 0 "data: csv, 2000 training samples, 500 test samples, rows of shape [6], float32 targets (one per row)" -- \
  "$troupe" validate "$tmp/reg.json"
expect 0 "loss: mse (evaluations report mse)" -- "$troupe" validate "$tmp/reg.json"
expect 0 "succeeded" -- "$troupe" run "$tmp/reg.json" --out "$tmp/reg" --quiet
falls "$tmp/reg" test_mse
below "regression test mse" "$(figure "$tmp/reg" test_mse)" 0.05  # the noise alone is 0.01
in_pytorch "$tmp/reg"
grep -q '"label": "price"' "$tmp/reg/job.json" && pass || fail "job.json lacks the label column"
# ... with l1, whose metric is the mean absolute error.
job reg_l1 "$reg" l1
expect 0 "succeeded" -- "$troupe" run "$tmp/reg_l1.json" --out "$tmp/reg_l1" --quiet
falls "$tmp/reg_l1" test_mae
in_pytorch "$tmp/reg_l1"
# ... with a validation split, early stopping watching the loss (mse has no accuracy).
expect 0 "succeeded" -- "$troupe" run "$tmp/reg.json" --out "$tmp/reg_val" --quiet \
  --set data.validation=0.2 --set training.keep_best=validation_loss
[ -n "$(figure "$tmp/reg_val" validation_mse)" ] && pass || fail "no validation_mse in summary.json"
expect 2 '/training/keep_best: loss mse has no accuracy; watch "validation_loss" (its mse)' -- \
  "$troupe" validate "$tmp/reg.json" --set data.validation=0.2 \
  --set training.keep_best=validation_accuracy

# A suite of regression jobs ranks by validation loss, the lowest first, and stop_losers stops a
# job whose validation loss is above the median of the finished jobs' (one job at a time, so the
# hopeless one meets both).
cat >"$tmp/reg_suite.json" <<JSON
{"name": "reg_suite", "seed": 3, "model": {"type": "mlp", "hidden": [32]},
 "data": $(sed 's/}$/, "validation": 0.2}/' <<<"$reg"),
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 100, "batch_size": 50, "eval_interval": 20, "loss": "mse"},
 "devices": [{"device": "cpu", "threads": 2}], "max_concurrent": 1, "stop_losers": {"after": 2},
 "jobs": [{"name": "good"}, {"name": "fair", "optimizer": {"lr": 0.005}},
          {"name": "hopeless", "optimizer": {"lr": 1e-7, "momentum": 0},
           "training": {"steps": 1000000}, "limits": {"time_s": 120}}]}
JSON
expect 0 "stopped by stop_losers after 2 evaluations: validation loss" -- \
  "$troupe" run "$tmp/reg_suite.json" --out "$tmp/reg_suite"
$py - "$tmp/reg_suite" <<'PY' && pass || fail "the regression suite's leaderboard"
import json, sys
folder = sys.argv[1]
board = json.load(open(f"{folder}/leaderboard.json"))
own = {n: json.load(open(f"{folder}/{n}/summary.json")) for n in ["good", "fair", "hopeless"]}
rows = [(r["name"], r["rank"]) for r in board["jobs"]]
ranked = sorted(["good", "fair"], key=lambda n: own[n]["validation_loss"])
print(board["ranked_by"], rows, {n: own[n].get("validation_loss") for n in own})
assert board["ranked_by"] == "validation_loss"
assert rows == [(ranked[0], 1), (ranked[1], 2), ("hopeless", None)]
assert own["hopeless"]["status"] == "stopped"
assert " > median " in own["hopeless"]["error"]
PY

# Classification on a CSV table (quoted cells, CRLF line ends), the label column last.
job cls '{"type": "csv", "train": "'$tmp'/cls_train.csv", "test": "'$tmp'/cls_test.csv"}' cross_entropy
expect 0 "rows of shape [5], 3 classes" -- "$troupe" validate "$tmp/cls.json"
expect 0 "succeeded" -- "$troupe" run "$tmp/cls.json" --out "$tmp/cls" --quiet
below "classification error" "$($py -c "print(1 - $(figure "$tmp/cls" test_accuracy))")" 0.2
in_pytorch "$tmp/cls"

# Multi-label tensors under bce_with_logits: accuracy at 0.5 over every label.
job multi '{"type": "tensors", "train": "'$tmp'/multi_train.pt", "test": "'$tmp'/multi_test.pt"}' bce_with_logits
expect 0 "float32 targets [4] per row" -- "$troupe" validate "$tmp/multi.json"
expect 0 "succeeded" -- "$troupe" run "$tmp/multi.json" --out "$tmp/multi" --quiet
below "multi-label error" "$($py -c "print(1 - $(figure "$tmp/multi" test_accuracy))")" 0.1
in_pytorch "$tmp/multi"
# Vector targets under mse; local_sgd and async train them too.
job vec '{"type": "tensors", "train": "'$tmp'/vec_train.pt", "test": "'$tmp'/vec_test.pt"}' mse
# (async at a lower rate: stale gradients with momentum 0.9 overshoot at 0.05.)
for policy in sync local_sgd async; do
  lr=0.05
  [ $policy = async ] && lr=0.02
  expect 0 "succeeded" -- "$troupe" run "$tmp/vec.json" --out "$tmp/vec_$policy" --quiet \
    --set parallelism.policy=$policy --set optimizer.lr=$lr
  falls "$tmp/vec_$policy" test_mse
  in_pytorch "$tmp/vec_$policy"
done
# A 2-stage pipeline of the built-in mlp on them.
expect 0 "succeeded" -- "$troupe" run "$tmp/vec.json" --out "$tmp/vec_pipe" --quiet \
  --set parallelism.stages=2 --set parallelism.micro_batches=2 --set 'model.hidden=[32,32]'
in_pytorch "$tmp/vec_pipe"
# The ensemble averages class probabilities: it needs cross_entropy.
expect 2 "/training/loss: a stacked ensemble averages its members' class probabilities and needs cross_entropy, got mse" -- \
  "$troupe" validate "$tmp/vec.json" --set ensemble.members=2 --set parallelism.replicas=1
# The built-in cnn needs images.
expect 2 "/model/type: the built-in cnn takes images as rows of [channels, height, width], the data's rows are [4]" -- \
  "$troupe" validate "$tmp/vec.json" --set 'model={"type":"cnn"}'

# Bad tables: exit 2, the file, the line and the column named, no folder made.
bad() {  # bad FILE PATTERN [--set ...]
  local file=$1 pattern=$2
  shift 2
  job bad '{"type": "csv", "train": "'$tmp/$file'", "test": "'$tmp'/cls_test.csv"}' cross_entropy
  expect 2 "$pattern" -- "$troupe" run "$tmp/bad.json" --out "$tmp/out_$file" --quiet \
    --set training.batch_size=2 "$@"
  [ ! -e "$tmp/out_$file" ] && pass || fail "$file: an output folder was made"
}
bad bad_no_label.csv "$tmp/bad_no_label.csv: line 1: no column \"label\" (data.label) in the header (x1,x2,y)"
bad bad_text.csv "$tmp/bad_text.csv: line 3: column \"x2\" holds \"abc\", not a number"
bad bad_fields.csv "$tmp/bad_fields.csv: line 3: 2 fields, the header has 3"
bad bad_empty.csv "$tmp/bad_empty.csv: is empty"
bad bad_header_only.csv "$tmp/bad_header_only.csv: holds a header but no rows"
bad bad_quote.csv "$tmp/bad_quote.csv: line 3: not valid CSV"
bad bad_inf.csv "$tmp/bad_inf.csv: line 3: column \"x1\" holds inf, not a finite float"
bad bad_huge.csv "$tmp/bad_huge.csv: line 3: column \"x1\" holds 1e999, not a finite float"
bad bad_fraction.csv "$tmp/bad_fraction.csv: line 3: column \"label\" holds 1.5: under cross_entropy the label is a class number from 0"
bad bad_big_label.csv "$tmp/bad_big_label.csv: line 3: column \"label\" holds 1000000: at most 100000 classes"
bad bad_only_label.csv "$tmp/bad_only_label.csv: line 1: the header names only the label column"
bad bad_empty_cell.csv "$tmp/bad_empty_cell.csv: line 3: column \"x2\" is empty"
bad missing.csv "$tmp/missing.csv: cannot open it (No such file or directory)"
# A table that never ends (it was read into one field until memory ran out), a field of 2 MiB,
# a pipe (opening it waited for a writer forever).
ln -sf /dev/zero "$tmp/bad_endless.csv"
bad bad_endless.csv "$tmp/bad_endless.csv: not a regular file (a device or socket)"
head -c 2097152 /dev/zero | tr '\0' 7 >"$tmp/bad_long.csv"
bad bad_long.csv "$tmp/bad_long.csv: line 1: a field longer than 1 MiB: is it a CSV table of numbers?"
mkfifo "$tmp/bad_pipe.csv"
bad bad_pipe.csv "$tmp/bad_pipe.csv: not a regular file (a pipe)"
# Blank lines count in the line numbers (libcsv skips them); "abc" is on line 6.
printf 'x1,x2,label\r\n\r\n0.5,0.25,1\r\n\r\n\r\n0.5,abc,2\r\n' >"$tmp/bad_blank_lines.csv"
bad bad_blank_lines.csv "$tmp/bad_blank_lines.csv: line 6: column \"x2\" holds \"abc\", not a number"
printf '\n\nx1,x2,label\n0.5,0.25,1\n\n0.5\n' >"$tmp/bad_blank_start.csv"
bad bad_blank_start.csv "$tmp/bad_blank_start.csv: line 6: 1 fields, the header has 3"
# A column named twice (the label read from the last "label", the first fed in as a feature).
printf 'label,x,label\n1,0.5,2\n0,0.25,1\n' >"$tmp/bad_twice.csv"
bad bad_twice.csv "$tmp/bad_twice.csv: line 1: columns 1 and 3 are both named \"label\""
# A spreadsheet's byte order mark before the header is not part of the first column's name.
{ printf '\xef\xbb\xbf'; cat "$tmp/cls_train.csv"; } >"$tmp/cls_train_bom.csv"
job cls_bom '{"type": "csv", "train": "'$tmp'/cls_train_bom.csv", "test": "'$tmp'/cls_test.csv"}' cross_entropy
expect 0 "rows of shape [5], 3 classes" -- "$troupe" validate "$tmp/cls_bom.json"
job bad '{"type": "csv", "train": "'$tmp'/cls_train.csv", "test": "'$tmp'/bad_other_header.csv"}' cross_entropy
expect 2 "$tmp/bad_other_header.csv: line 1: the header differs from the training file's at column 2: \"x3\" here, \"x2\" there (3 columns here, 6 there)" -- \
  "$troupe" validate "$tmp/bad.json"
job bad '{"type": "csv", "train": "'$tmp'/cls_train.csv"}' cross_entropy
expect 2 'data of type csv needs "train" and "test"' -- "$troupe" validate "$tmp/bad.json"
job bad '{"type": "csv", "train": "'$tmp'/cls_train.csv", "test": "'$tmp'/cls_test.csv", "label": ""}' cross_entropy
expect 2 '/data/label: must be a non-empty string' -- "$troupe" validate "$tmp/bad.json"
expect 2 '/training/loss: must be one of "cross_entropy", "mse", "l1", "bce_with_logits"' -- \
  "$troupe" validate "$tmp/cls.json" --set training.loss=hinge

report table_data_test
