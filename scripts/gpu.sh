#!/usr/bin/env bash
# Builds troupe with CUDA and runs the GPU tests and benchmarks, on a machine with an NVIDIA GPU
# whose python3 holds a CUDA build of torch but which has no package archive (the device
# machines this project is lent). Two steps:
#
#   scripts/gpu.sh bundle   here, with Debian's archive: downloads CAF, nlohmann/json, doctest,
#                           CLI11, fmt, zlib headers, OpenSSL and Fashion-MNIST as .deb files and
#                           unpacks them (dpkg -x) into .gpu-deps/ (ignored by git; ~40 MiB; the
#                           device tool carries it with `carry: [".gpu-deps"]`)
#   scripts/gpu.sh tests    there: the same build of troupe_gpu_tests alone and its run, for a
#                           second call that checks a fix to the tests (gpu_tests.log)
#   scripts/gpu.sh run      there, in a copy of the tree that carries .gpu-deps/: configures
#                           against python3's LibTorch (torch.utils.cmake_prefix_path) with
#                           TROUPE_CUDA=ON, builds only what the check runs with every core (and
#                           on past a failed file, so one run lists every compile error), runs the
#                           GPU tests and bench/gpu_figures.py, and writes their logs and JSON into
#                           $OUT (or .gpu-out/), each phase time-stamped:
#                             env.log (what the machine has), gpu_build.log, gpu_tests.log,
#                             figures.log, gpu-results.json, nccl_allreduce.json
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
deps=$root/.gpu-deps
packages=(libcaf-dev libcaf-core0.17 libcaf-io0.17 nlohmann-json3-dev doctest-dev libcli11-dev
  libfmt-dev libfmt9 zlib1g-dev dataset-fashion-mnist libssl-dev libssl3 libcsv-dev libcsv3
  libpng-dev libpng16-16 libturbojpeg0-dev libturbojpeg0 libmicrohttpd-dev libmicrohttpd12)

bundle() {
  rm -rf "$deps"
  mkdir -p "$deps/debs" "$deps/root"
  (cd "$deps/debs" && apt-get download "${packages[@]}")
  for deb in "$deps"/debs/*.deb; do
    dpkg -x "$deb" "$deps/root"
  done
  rm -rf "$deps/debs" "$deps/root/usr/share/doc" "$deps/root/usr/share/man" \
    "$deps/root/usr/share/info"
  # Shared libraries are what troupe links, but for zlib's: its static archives would take a fifth
  # of the 64 MiB that travels to the device machine.
  find "$deps/root" -name '*.a' ! -name libz.a -delete
  echo "gpu.sh: unpacked ${#packages[@]} packages into $deps/root ($(du -sh "$deps" | cut -f1))"
}

started=$SECONDS
phase() { echo "== $(date -u +%T) +$((SECONDS - started))s $*"; }

# What the build depends on, written before anything can fail: the next attempt reads it here.
machine_facts() {
  phase "machine"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  uname -r; nproc; g++ --version | head -1; cmake --version | head -1; ninja --version || true
  command -v nvcc && nvcc --version | tail -2 || echo "no nvcc on PATH"
  ls -d /usr/local/cuda* 2>/dev/null || true
  python3 - <<'PY' || true
import os, torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version())
print("cmake prefix", torch.utils.cmake_prefix_path)
inc = os.path.join(os.path.dirname(torch.__file__), "include")
print("torch/include:", sorted(os.listdir(inc)))
PY
  local nvidia
  nvidia=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null) &&
    find "$nvidia" -maxdepth 3 \( -name 'nccl.h' -o -name 'cudnn.h' -o -name 'libnccl.so*' \
      -o -name 'libcudnn.so*' -o -name 'cuda_runtime.h' \) | head -20
  ldconfig -p | grep -E 'libgnutls|libssl\.so|libcrypto\.so|libz\.so' || true
}

# The folder above include/HEADER among the nvidia-* wheels (nvidia/nccl, or nvidia/cu13 where
# CUDA 13's wheels share one), or nothing.
wheel_home() {
  local nvidia header
  nvidia=$(python3 -c 'import nvidia; print(list(nvidia.__path__)[0])' 2>/dev/null) || return 0
  header=$(find "$nvidia" -path "*/include/$1" 2>/dev/null | head -1)
  [ -n "$header" ] && dirname "$(dirname "$header")"
  return 0
}

run() {
  local only_tests=${1:-}
  [ -d "$deps/root/usr" ] || { echo "gpu.sh: $deps is missing: run 'scripts/gpu.sh bundle' first" >&2; exit 2; }
  local out=${OUT:-$root/.gpu-out}
  mkdir -p "$out"
  machine_facts > "$out/env.log" 2>&1
  local torch_prefix nccl_home abi cuda_home
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')
  abi=$(python3 -c 'import torch; print(int(torch.compiled_with_cxx11_abi()))')
  if [ "$abi" != 1 ]; then
    echo "gpu.sh: python3's torch uses the pre-C++11 ABI; Debian's CAF needs the C++11 one" >&2
    exit 2
  fi
  # NCCL: the toolkit's, else the nvidia-nccl wheel that CUDA builds of torch depend on.
  nccl_home=${NCCL_HOME:-}
  if [ -z "$nccl_home" ] && [ ! -e /usr/local/cuda/include/nccl.h ]; then
    nccl_home=$(wheel_home nccl.h)
  fi
  local nvcc
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  cuda_home=$(dirname "$(dirname "$nvcc")")
  export PATH=$cuda_home/bin:$PATH CUDA_HOME=$cuda_home CUDAToolkit_ROOT=$cuda_home
  # cuDNN from its wheel, where LibTorch's CMake package looks for it (a warning if not found).
  local cudnn
  cudnn=$(wheel_home cudnn.h)
  if [ -n "$cudnn" ]; then
    export CUDNN_ROOT=$cudnn CUDNN_INCLUDE_DIR=$cudnn/include CUDNN_LIB_DIR=$cudnn/lib
  fi
  # The wheel ships fmt (and nlohmann) headers of its own under torch/include, searched before
  # Debian's when both are -isystem: a -I folder holding only Debian's is searched first, so the
  # sources see the fmt whose library they link (libfmt.so.9). Not being system headers there,
  # fmt 9's trip GCC 13's -Wdangling-reference in every file (a false alarm fmt 10 silenced).
  local first=$deps/first
  mkdir -p "$first"
  ln -sfn "$deps/root/usr/include/fmt" "$first/fmt"
  ln -sfn "$deps/root/usr/include/nlohmann" "$first/nlohmann"
  local lib=$deps/root/usr/lib/x86_64-linux-gnu
  local build=$root/build-gpu
  local status=0
  {
    phase "configure"
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTROUPE_CUDA=ON \
      -DTROUPE_PCH=ON -DTROUPE_PYTHON=OFF -DTROUPE_GLOO=OFF -DCMAKE_PREFIX_PATH="$torch_prefix;$deps/root/usr" \
      -DCMAKE_CXX_FLAGS="-I$first -Wno-dangling-reference" -DCMAKE_CUDA_COMPILER="$nvcc" \
      -DCUDA_TOOLKIT_ROOT_DIR="$cuda_home" \
      ${cudnn:+-DCUDNN_INCLUDE_PATH="$cudnn/include" -DCUDNN_LIBRARY_PATH="$(ls "$cudnn"/lib/libcudnn.so* | head -1)"} \
      -DCAF_INCLUDE_DIR="$deps/root/usr/include" \
      -DCAF_CORE_LIB="$lib/libcaf_core.so" -DCAF_IO_LIB="$lib/libcaf_io.so" \
      -DZLIB_INCLUDE_DIR="$deps/root/usr/include" -DZLIB_LIBRARY="$lib/libz.a" \
      -DOPENSSL_ROOT_DIR="$deps/root/usr" \
      -DMHD_INCLUDE_DIR="$deps/root/usr/include" -DMHD_LIB="$lib/libmicrohttpd.so" \
      -DTROUPE_FASHION_MNIST="$deps/root/usr/share/datasets/fashion-mnist" \
      ${nccl_home:+-DNCCL_HOME="$nccl_home"}
    phase "build"
    # -k 0: on past a failed file, so that one run shows every file LibTorch 2.x breaks.
    local targets=(troupe_gpu_tests gpu_train_bench nccl_allreduce_bench troupe)
    if [ -n "$only_tests" ]; then
      targets=(troupe_gpu_tests troupe)
    fi
    cmake --build "$build" -j "$(nproc)" --target "${targets[@]}" -- -k 0
    phase "built"
  } > "$out/gpu_build.log" 2>&1 || status=1
  grep -E 'error|Error|FAILED' "$out/gpu_build.log" | head -60 || true
  if [ $status != 0 ]; then
    phase "build failed: see gpu_build.log"
    exit 1
  fi
  local data=$deps/root/usr/share/datasets/fashion-mnist
  phase "tests"
  (cd "$build" && ctest -R 'troupe_gpu_tests' --output-on-failure --timeout 150) \
    > "$out/gpu_tests.log" 2>&1 || status=1
  tail -5 "$out/gpu_tests.log"
  if [ -n "$only_tests" ]; then
    grep -E 'ERROR|values|logged' "$out/gpu_tests.log" | head -40 || true
    phase "done (status $status)"
    exit $status
  fi
  phase "nccl"
  "$build/bench/nccl_allreduce_bench" > "$out/nccl_allreduce.json" 2>&1 || true
  phase "figures"
  python3 "$root/bench/gpu_figures.py" --build "$build" --data "$data" \
    --kind "${TROUPE_GPU_KIND:-}" --out "$out/gpu-results.json" > "$out/figures.log" 2>&1 || status=1
  tail -40 "$out/figures.log"
  phase "done (status $status)"
  exit $status
}

case "${1:-}" in
  bundle) bundle ;;
  run) run ;;
  tests) run only_tests ;;
  *) echo "usage: scripts/gpu.sh bundle|run|tests" >&2; exit 2 ;;
esac
