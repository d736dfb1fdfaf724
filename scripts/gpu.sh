#!/usr/bin/env bash
# Builds troupe with CUDA and runs the GPU tests and benchmarks, on a machine with an NVIDIA GPU
# whose python3 holds a CUDA build of torch but which has no package archive (the device
# machines this project is lent). Two steps:
#
#   scripts/gpu.sh bundle   here, with Debian's archive: downloads CAF, nlohmann/json, doctest,
#                           CLI11, fmt, zlib headers, OpenSSL and Fashion-MNIST as .deb files and
#                           unpacks them (dpkg -x) into .gpu-deps/ (ignored by git; ~40 MiB; the
#                           device tool carries it with `carry: [".gpu-deps"]`)
#   scripts/gpu.sh run      there, in a copy of the tree that carries .gpu-deps/: configures
#                           against python3's LibTorch (torch.utils.cmake_prefix_path) with
#                           TROUPE_CUDA=ON, builds, runs the GPU tests and benchmarks, and writes
#                           their logs and JSON into $OUT (or .gpu-out/)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps=$root/.gpu-deps
packages=(libcaf-dev libcaf-core0.17 libcaf-io0.17 nlohmann-json3-dev doctest-dev libcli11-dev
  libfmt-dev libfmt9 zlib1g-dev dataset-fashion-mnist libssl-dev libssl3 libcsv-dev libcsv3
  libpng-dev libpng16-16 libturbojpeg0-dev libturbojpeg0)

bundle() {
  rm -rf "$deps"
  mkdir -p "$deps/debs" "$deps/root"
  (cd "$deps/debs" && apt-get download "${packages[@]}")
  for deb in "$deps"/debs/*.deb; do
    dpkg -x "$deb" "$deps/root"
  done
  rm -rf "$deps/debs" "$deps/root/usr/share/doc" "$deps/root/usr/share/man"
  echo "gpu.sh: unpacked ${#packages[@]} packages into $deps/root ($(du -sh "$deps" | cut -f1))"
}

run() {
  [ -d "$deps/root/usr" ] || { echo "gpu.sh: $deps is missing: run 'scripts/gpu.sh bundle' first" >&2; exit 2; }
  local out=${OUT:-$root/.gpu-out}
  mkdir -p "$out"
  local torch_prefix nccl_home abi
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  abi=$(python3 -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))')
  if [ "$abi" != 1 ]; then
    echo "gpu.sh: python3's torch uses the pre-C++11 ABI; Debian's CAF needs the C++11 one" >&2
    exit 2
  fi
  # NCCL: the toolkit's, else the nvidia-nccl wheel that CUDA builds of torch depend on.
  nccl_home=${NCCL_HOME:-}
  if [ -z "$nccl_home" ] && [ ! -e /usr/local/cuda/include/nccl.h ]; then
    nccl_home=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>/dev/null || true)
  fi
  local lib=$deps/root/usr/lib/x86_64-linux-gnu
  export LD_LIBRARY_PATH=$lib${nccl_home:+:$nccl_home/lib}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  local build=$root/build-gpu
  {
    echo "== torch $(python3 -c 'import torch; print(torch.__version__, torch.version.cuda)')"
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTROUPE_CUDA=ON \
      -DTROUPE_PCH=OFF -DCMAKE_PREFIX_PATH="$torch_prefix;$deps/root/usr" \
      -DCAF_INCLUDE_DIR="$deps/root/usr/include" \
      -DCAF_CORE_LIB="$lib/libcaf_core.so" -DCAF_IO_LIB="$lib/libcaf_io.so" \
      -DZLIB_INCLUDE_DIR="$deps/root/usr/include" -DZLIB_LIBRARY="$lib/libz.a" \
      -DOPENSSL_ROOT_DIR="$deps/root/usr" \
      ${nccl_home:+-DNCCL_HOME="$nccl_home"}
    cmake --build "$build" -j "$(nproc)"
  } 2>&1 | tee "$out/gpu_build.log"
  local data=$deps/root/usr/share/datasets/fashion-mnist
  local status=0
  ctest --test-dir "$build" -R 'troupe_gpu_tests' --output-on-failure \
    2>&1 | tee "$out/gpu_tests.log" || status=1
  "$build/bench/gpu_train_bench" --data "$data" | tee "$out/gpu_train.json" || status=1
  "$build/bench/nccl_allreduce_bench" | tee "$out/nccl_allreduce.json" || status=1
  exit $status
}

case "${1:-}" in
  bundle) bundle ;;
  run) run ;;
  *) echo "usage: scripts/gpu.sh bundle|run" >&2; exit 2 ;;
esac
