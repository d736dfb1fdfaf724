#!/usr/bin/env bash
# The README's first command: installs what is missing, builds the troupe program (only it: the
# tests and benchmarks are ./scripts/test.sh's), and trains the default job (Fashion-MNIST MLP,
# 2 synchronous replicas). Extra arguments go to `troupe run`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install_deps.sh"
[ -x "$root/build/apps/troupe" ] ||
  echo "run_default: building troupe for the first time (about 17 minutes on 2 cores)"
TROUPE_TARGET=troupe "$root/scripts/build.sh"
cd "$root"
exec ./build/apps/troupe run configs/fashion_mlp_sync.json "$@"
