#!/usr/bin/env bash
# Your own images as folders (data.type "image_folder", torchvision's ImageFolder layout): gray
# PNGs and RGB JPEGs made from Fashion-MNIST train with normalization and augmentation (random
# crop with padding, horizontal flip) in every mode (replicas, async, local_sgd, a pipeline, an
# ensemble, two node processes); a run killed with SIGKILL and resumed ends bitwise equal to the
# uninterrupted one, augmentation included; a corrupt image is refused naming it (exit 2) or,
# with bad_images "skip", left out and counted in summary.json; an empty class folder and a test
# folder of other classes are refused. Skips (77) where /usr/bin/python3 lacks torch or PIL.
#   image_folder_test.sh PATH/TO/troupe
set -uo pipefail
troupe=$1
here=$(cd "$(dirname "$0")" && pwd)
source "$here/../lib/harness.sh"
fashion=/usr/share/datasets/fashion-mnist
require_python_torch
require_fashion_mnist
/usr/bin/python3 -c "import PIL" 2>/dev/null ||
  skip "needs /usr/bin/python3 with PIL (scripts/install_deps.sh --tests installs python3-pil)"
/usr/bin/python3 "$here/../python/make_image_folders.py" "$fashion" "$tmp" || fail "making folders"

job() {  # job TRAIN TEST [IMAGE]: a job on those folders
  cat >"$tmp/job.json" <<JSON
{"name": "own_images", "seed": 1, "model": {"type": "mlp", "hidden": [64]},
 "data": {"type": "image_folder", "train": "$tmp/$1", "test": "$tmp/$2",
          "image": ${3:-{\"size\": [28, 28], \"channels\": 1, \"mean\": [0.286], \"std\": [0.353]\}},
          "augment": {"random_crop_padding": 2, "horizontal_flip": true}},
 "optimizer": {"type": "sgd", "lr": 0.05, "momentum": 0.9},
 "training": {"steps": 150, "batch_size": 64, "eval_interval": 75},
 "parallelism": {"policy": "sync", "replicas": 2}}
JSON
}
job train test
expect 0 "data: image_folder, 3000 training samples, 1000 test samples, rows of shape [1, 28, 28], 10 classes" -- \
  "$troupe" validate "$tmp/job.json"

learns() { reaches_accuracy "$tmp/job.json" "$@"; }
learns sync 0.6
learns async 0.55 --set parallelism.policy=async --set parallelism.max_staleness=2 --set optimizer.lr=0.02
learns local_sgd 0.55 --set parallelism.policy=local_sgd --set parallelism.period=4
learns pipeline 0.55 --set parallelism.replicas=1 --set parallelism.stages=2 \
  --set parallelism.micro_batches=2 --set 'model.hidden=[64,32]'
learns ensemble 0.55 --set ensemble.members=3 --set parallelism.replicas=1
learns nodes 0.6 --set cluster.nodes=2 --local-nodes 2
expect 0 "succeeded" -- "$troupe" run "$tmp/sync/job.json" --out "$tmp/again" --quiet
cmp -s "$tmp/sync/final_weights.pt" "$tmp/again/final_weights.pt" && pass ||
  fail "the run of job.json differs"
# Batches gathered ahead by the loader (data.prefetch 2, the default) or on the worker's thread
# when the step needs them: the same pixels, the same weights. The wait is recorded either way.
expect 0 "succeeded" -- "$troupe" run "$tmp/job.json" --out "$tmp/no_prefetch" --quiet --set data.prefetch=0
cmp -s "$tmp/sync/final_weights.pt" "$tmp/no_prefetch/final_weights.pt" && pass ||
  fail "data.prefetch 0 trains other weights than the loader"
for run in sync no_prefetch; do
  grep -q '"data_wait_s"' "$tmp/$run/summary.json" && grep -q '"data_wait_s"' "$tmp/$run/metrics.jsonl" &&
    pass || fail "$run: no data_wait_s in summary.json or metrics.jsonl"
done
# A pipeline's first stage and a stacked ensemble load ahead too: the same weights without.
for run in pipeline ensemble; do
  expect 0 "succeeded" -- "$troupe" run "$tmp/$run/job.json" --out "$tmp/${run}_inline" --quiet \
    --set data.prefetch=0
done
cmp -s "$tmp/pipeline/final_weights.pt" "$tmp/pipeline_inline/final_weights.pt" && pass ||
  fail "a pipeline without its loader trains other weights"
cmp -s "$tmp/ensemble/member_2.pt" "$tmp/ensemble_inline/member_2.pt" && pass ||
  fail "an ensemble without its loader trains other weights"
# Decoded into a scratch file rather than memory (data.image.cache "disk"): the same weights,
# and the file gone with the run; a cache folder that is not there is refused before it runs.
mkdir -p "$tmp/cache"
expect 0 "succeeded" -- "$troupe" run "$tmp/sync/job.json" --out "$tmp/on_disk" --quiet \
  --set data.image.cache=disk --set data.image.cache_dir="$tmp/cache"
cmp -s "$tmp/sync/final_weights.pt" "$tmp/on_disk/final_weights.pt" && pass ||
  fail "cache disk trains other weights than cache memory"
[ -z "$(ls -A "$tmp/cache")" ] && pass || fail "scratch files left in the cache folder: $(ls "$tmp/cache")"
expect 2 "$tmp/nowhere: cannot hold scratch files" -- "$troupe" validate "$tmp/sync/job.json" \
  --set data.image.cache=disk --set data.image.cache_dir="$tmp/nowhere"
# RGB JPEGs of another size, a CNN on them.
job jpg_train jpg_test '{"size": [32, 32], "channels": 3, "mean": [0.3, 0.2, 0.7], "std": [0.3, 0.2, 0.3]}'
expect 0 "rows of shape [3, 32, 32]" -- "$troupe" validate "$tmp/job.json"
learns jpeg 0.5 --set 'model={"type":"cnn","channels":[8,16],"hidden":[32]}'

# SIGKILL after the first checkpoint, --resume: bitwise the uninterrupted run, augmentation on.
job train test
resumes_bitwise "$tmp/job.json" --set training.steps=400 --set checkpoint.every_steps=25 \
  --set faults.slow_worker=0 --set faults.slow_ms=4

# Bad folders: refused before the run, naming what is wrong; or the image left out and counted.
job train corrupt
expect 2 "$tmp/corrupt/bag/broken.png: a corrupt PNG" -- "$troupe" run "$tmp/job.json" --out "$tmp/bad" --quiet
[ ! -e "$tmp/bad" ] && pass || fail "an output folder was made for a corrupt image"
expect 0 "warning: left out $tmp/corrupt/bag/broken.png: a corrupt PNG" -- \
  "$troupe" run "$tmp/job.json" --out "$tmp/skip" --quiet --set data.bad_images=skip
grep -q '"skipped_inputs": 1' "$tmp/skip/summary.json" && pass || fail "summary.json does not count the skipped image"
expect 0 '1000 test samples (1 unreadable images left out, data.bad_images "skip")' -- \
  "$troupe" validate "$tmp/job.json" --set data.bad_images=skip
job train empty_class
expect 2 "$tmp/empty_class/zz_empty: a class folder without images" -- "$troupe" validate "$tmp/job.json"
job train other_classes
expect 2 "$tmp/other_classes: holds the classes" -- "$troupe" validate "$tmp/job.json"
job train missing
expect 2 "$tmp/missing: not a folder" -- "$troupe" validate "$tmp/job.json"
job train test '{"channels": 1}'
expect 2 '/data/image: needs "size"' -- "$troupe" validate "$tmp/job.json"
job train test '{"size": [28, 28], "channels": 1, "mean": [0.1, 0.2]}'
expect 2 '/data/image/mean' -- "$troupe" validate "$tmp/job.json"

report image_folder_test
