#!/usr/bin/env bash
# The README's first command: installs what is missing, builds, and trains the default job
# (Fashion-MNIST MLP, 2 synchronous replicas). Extra arguments go to `troupe run`.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install_deps.sh"
"$root/scripts/build.sh"
cd "$root"
exec ./build/apps/troupe run configs/fashion_mlp_sync.json "$@"
