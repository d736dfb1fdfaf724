#!/usr/bin/env bash
# Your own data as tensor files (data.type "tensors"): files Python's torch.save wrote train
# (uint8 and normalized float32 inputs), and every bad file is refused before anything runs,
# exit 2, naming the file and the key. Skips (77) where /usr/bin/python3 lacks torch.
#   tensor_data_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"
fashion=/usr/share/datasets/fashion-mnist
require_python_torch
require_fashion_mnist
/usr/bin/python3 "$here/../python/make_tensor_files.py" "$fashion" "$tmp" || fail "making files"

job() {  # job TRAIN TEST: a job file on those files
  cat >"$tmp/job.json" <<JSON
{"name": "own_data", "seed": 1, "model": {"type": "mlp", "hidden": [64]},
 "data": {"type": "tensors", "train": "$1", "test": "$2"},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 150, "batch_size": 64, "eval_interval": 75},
 "parallelism": {"policy": "sync", "replicas": 2}}
JSON
}

job "$tmp/train.pt" "$tmp/test.pt"
expect 0 "data: tensors, 3000 training samples, 1000 test samples" -- \
  "$troupe" validate "$tmp/job.json"
expect 0 "succeeded" -- "$troupe" run "$tmp/job.json" --out "$tmp/run" --quiet
/usr/bin/python3 -c "import json,sys; s=json.load(open(sys.argv[1])); sys.exit(0 if s['test_accuracy'] > 0.65 else 1)" \
  "$tmp/run/summary.json" && pass || fail "own data: test accuracy $(grep -o '"test_accuracy": [0-9.]*' "$tmp/run/summary.json")"
grep -q '"formula": "x/255 for uint8 x, else x"' "$tmp/run/job.json" && pass ||
  fail "job.json does not state the preprocessing"
expect 0 "succeeded" -- "$troupe" run "$tmp/run/job.json" --out "$tmp/again" --quiet

bad() {  # bad FILE PATTERN: FILE as the training set is refused, naming it
  job "$tmp/$1" "$tmp/test.pt"
  expect 2 "$tmp/$1: $2" -- "$troupe" run "$tmp/job.json" --out "$tmp/bad_$1" --quiet
  [ ! -e "$tmp/bad_$1" ] && pass || fail "$1: an output folder was made"
}
bad wrong_keys.pt 'needs a dict with exactly the keys "x" and "y", got {"labels", "x"}'
bad rows_differ.pt '"x" has 10 rows and "y" 9'
bad double_x.pt '"x" is Double; it must be float32 or uint8'
bad int_y.pt '"y" is Int [10]; it must be int64 [N] class labels (cross_entropy) or float32 [N, ...] targets'
bad nan.pt '"x" holds non-finite values (first in row 3)'
bad legacy.pt 'not a readable torch.save file'
bad random.pt 'not a readable torch.save file'
bad truncated.pt 'not a readable torch.save file'
bad short_storage.pt 'storage data/0 declares 2352000 bytes (ByteStorage) but its record holds 235200 bytes'
bad missing.pt 'cannot open'
job "$tmp/train.pt" "$tmp/big_label.pt"
expect 2 "$tmp/big_label.pt: \"y\" holds the label 12, but the training data has 10 classes" -- \
  "$troupe" validate "$tmp/job.json"
job "$tmp/train.pt" "$tmp/float_y.pt"
expect 2 "$tmp/float_y.pt: \"y\" holds float32 targets (one per row), the training data int64 class labels: they must match" -- \
  "$troupe" validate "$tmp/job.json"
# Float targets are for mse, l1 and bce_with_logits; cross_entropy needs class labels.
job "$tmp/float_y.pt" "$tmp/float_y.pt"
expect 2 "/training/loss: cross_entropy needs int64 class labels, but $tmp/float_y.pt (\"y\") holds float32 targets (one per row) (use mse, l1 or bce_with_logits" -- \
  "$troupe" validate "$tmp/job.json" --set training.batch_size=5
job "$tmp/train.pt" "$tmp/test.pt"
expect 2 "/training/loss: mse needs float targets, but $tmp/train.pt (\"y\") holds int64 class labels" -- \
  "$troupe" validate "$tmp/job.json" --set training.loss=mse
job "$tmp/shape.pt" "$tmp/test.pt"
expect 2 "$tmp/test.pt: \"x\" rows have shape [1, 28, 28], the training file's ($tmp/shape.pt) [3, 32, 32]: they must match" -- \
  "$troupe" validate "$tmp/job.json"
# Rows of other shapes: the built-in mlp flattens them, the cnn takes [channels, height, width].
job "$tmp/shape.pt" "$tmp/shape.pt"
expect 0 "rows of shape [3, 32, 32]" -- "$troupe" validate "$tmp/job.json" --set training.batch_size=5
expect 0 "conv1 (Conv2d): 1216 parameters" -- "$troupe" validate "$tmp/job.json" \
  --set training.batch_size=5 --set 'model={"type":"cnn","hidden":[32]}'
# Across nodes, each node reads its own copy, checked by SHA-256 (tests/e2e/torchscript_test.sh).
job "$tmp/train.pt" "$tmp/test.pt"
expect 0 "across 2 node process(es)" -- "$troupe" validate "$tmp/job.json" --set cluster.nodes=2
cat >"$tmp/nofiles.json" <<'JSON'
{"name": "x", "data": {"type": "tensors", "train": "a.pt"}}
JSON
expect 2 'data of type tensors needs "train" and "test"' -- "$troupe" validate "$tmp/nofiles.json"

report tensor_data_test
