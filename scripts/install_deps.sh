#!/usr/bin/env bash
# Installs from Debian's archive whatever troupe needs and the machine lacks. Idempotent and
# quick when everything is present (no apt-get update then).
#   install_deps.sh          what building and running need
#   install_deps.sh --tests  also python3-torch, which the tests use to load saved weights
set -euo pipefail
# libopenblas0-openmp: Debian's libtorch calls the BLAS behind libblas.so.3, which is the netlib
# reference implementation unless an optimized one is installed; the OpenMP build of OpenBLAS
# takes over that alternative and honours each actor thread's at::set_num_threads.
# libssl-dev: mutual TLS between troupe processes and `troupe certs` (OpenSSL's libssl and
# libcrypto; libcaf-dev's own libcaf_openssl is not used, see actors/links/tls_session.hpp).
# libcsv-dev: data.type csv (core/data/csv_table). libpng-dev, libturbojpeg0-dev: data.type
# image_folder decodes PNG and JPEG with them (core/data/image_decode).
# libgloo-dev: cluster.collective "gloo" (core/collective/gloo_mesh).
# pybind11-dev, python3-dev: the Python module (python/), built for Debian's python3.
# dpkg-dev and file: `cpack -G DEB` finds the program's Depends with dpkg-shlibdeps, on the files
# `file` says are ELF (tests/e2e/install_test.sh makes the packages).
packages=(build-essential cmake ninja-build pkg-config libcaf-dev libtorch-dev nlohmann-json3-dev
  doctest-dev zlib1g-dev libcli11-dev libfmt-dev dataset-fashion-mnist python3 libopenblas0-openmp
  libssl-dev libmicrohttpd-dev libcsv-dev libpng-dev libturbojpeg0-dev dpkg-dev file pybind11-dev
  python3-dev libgloo-dev)
# --tests: what the tests call besides troupe: PyTorch for the weight checks (and the Python
# module's load_model), pandas for the module's tables, NumPy and PIL
# (python3-pil) to write the arrays and image folders the data tests train on, Chromium for the
# report pages, iproute2 (ip, tc) for the black-hole link, procps (pgrep, pkill) for processes a
# test must find, time (/usr/bin/time) for peak memory, Slurm (slurmctld, slurmd, slurm-client)
# and munge for the sbatch example's test; util-linux (unshare, nsenter, mount, fallocate) is in
# every Debian.
if [ "${1:-}" = "--tests" ]; then
  packages+=(python3-torch python3-pandas python3-numpy python3-pil chromium iproute2 procps time
    slurmctld slurmd slurm-client munge)
fi
missing=()
for p in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install_deps: all ${#packages[@]} packages present"
  exit 0
fi
echo "install_deps: installing ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install_deps: done"
