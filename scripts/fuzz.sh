#!/usr/bin/env bash
# Runs a libFuzzer target of tests/fuzz (one per parser of outside input) with ASan and UBSan.
#   fuzz.sh TARGET SECONDS [--keep] [-- LIBFUZZER_FLAGS...]
#   fuzz.sh all SECONDS [--keep]       every target in turn, SECONDS each
#   fuzz.sh --list                     the targets
# Builds build-fuzz/ with clang++-14 (-DTROUPE_FUZZ=ON -DTROUPE_SANITIZE=address) when needed,
# installing clang and libFuzzer from Debian's archive when they are missing. The fuzzer starts
# from tests/fuzz/corpus/TARGET/ (seeds and crashes-found/); the inputs it finds go to a scratch
# folder, or with --keep those that add coverage are merged into tests/fuzz/corpus/TARGET/. An
# input that crashes, leaks, hangs (10 s; FUZZ_TIMEOUT) or needs more than 2 GiB is copied to
# tests/fuzz/corpus/TARGET/crashes-found/, which the ctest fuzz_replay.TARGET replays on every
# build: fix the parser and keep the file. Prints libFuzzer's final line (#N DONE cov: X ft: Y
# corp: ...) and a summary. Exit status: 0 nothing found, 1 a crash was found, 2 usage.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build="$root/build-fuzz"
cxx=${FUZZ_CXX:-clang++-14}
mapfile -t targets < <(sed -n 's/^set(troupe_fuzz_targets \(.*\))$/\1/p' \
  "$root/tests/fuzz/targets.cmake" | tr ' ' '\n')

usage() {
  echo "usage: $0 TARGET|all SECONDS [--keep] [-- LIBFUZZER_FLAGS...]" >&2
  echo "targets: ${targets[*]}" >&2
  exit 2
}

if [ "${1:-}" = --list ]; then
  printf '%s\n' "${targets[@]}"
  exit 0
fi
[ $# -ge 2 ] || usage
target=$1
seconds=$2
shift 2
keep=0
extra=()
while [ $# -gt 0 ]; do
  case $1 in
    --keep) keep=1 ;;
    --) shift; extra=("$@"); break ;;
    *) usage ;;
  esac
  shift
done
[[ $seconds =~ ^[0-9]+$ ]] || usage
if [ "$target" = all ]; then
  status=0
  for t in "${targets[@]}"; do
    args=("$t" "$seconds")
    [ $keep -eq 0 ] || args+=(--keep)
    "$0" "${args[@]}" || status=1
  done
  exit $status
fi
[[ " ${targets[*]} " == *" $target "* ]] || usage

# clang and libFuzzer's runtime: probe with a one-line fuzzer, install what is missing.
scratch=$(mktemp -d "${TMPDIR:-/tmp}/troupe-fuzz-$target.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
probe() {
  echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
    >"$scratch/probe.cpp"
  "$cxx" -fsanitize=fuzzer,address,undefined "$scratch/probe.cpp" -o "$scratch/probe" \
    >/dev/null 2>&1
}
if ! command -v "$cxx" >/dev/null || ! probe; then
  version=${cxx##*-}
  [[ $version =~ ^[0-9]+$ ]] || version=14
  echo "fuzz.sh: installing clang-$version and libFuzzer"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "clang-$version" \
    "libfuzzer-$version-dev" "libclang-rt-$version-dev" >/dev/null
  probe || { echo "fuzz.sh: $cxx cannot build a libFuzzer target" >&2; exit 2; }
fi

if [ ! -f "$build/CMakeCache.txt" ]; then
  "$root/scripts/install_deps.sh"
  # -O1 with line tables: quick enough, and reports name the line. Assertions stay on.
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" -DTROUPE_FUZZ=ON \
    -DTROUPE_SANITIZE=address -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" >/dev/null
fi
# Two fuzz.sh at once share build-fuzz/: one builds at a time.
flock "$build/.build.lock" cmake --build "$build" -j "$(nproc)" --target "fuzz_$target"

corpus="$root/tests/fuzz/corpus/$target"
found="$corpus/crashes-found"
mkdir -p "$corpus" "$scratch/new" "$scratch/artifacts"
# -entropic=0: the inlined ATen and nlohmann code give these targets tens of thousands of
# features, and libFuzzer's entropic bookkeeping over them took more than half of every run;
# without it the JSON targets run 1.6 to 2.7 times as many inputs and reach as much coverage.
# (Flags after -- come later and win: -- -entropic=1 turns it back on.)
flags=(-max_total_time="$seconds" -timeout="${FUZZ_TIMEOUT:-10}" -rss_limit_mb=2048
  -entropic=0 -print_final_stats=1 -artifact_prefix="$scratch/artifacts/")
[ -f "$root/tests/fuzz/$target.dict" ] && flags+=(-dict="$root/tests/fuzz/$target.dict")
# tests/fuzz/TARGET.flags: a target's own libFuzzer flags, one per line (# comments).
if [ -f "$root/tests/fuzz/$target.flags" ]; then
  mapfile -t own < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$root/tests/fuzz/$target.flags")
  flags+=("${own[@]}")
fi
# UBSan's reports abort (libFuzzer then saves the input); LibTorch's static registries are never
# freed, but libFuzzer only reports a leak when an input's own allocations outlive it.
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1}
# A target whose leaks are not its own (TARGET.flags: -detect_leaks=0) skips the exit check too.
if [[ " ${flags[*]} " == *" -detect_leaks=0 "* ]]; then
  ASAN_OPTIONS="$ASAN_OPTIONS:detect_leaks=0"
fi
echo "fuzz.sh: $target for ${seconds}s from $corpus"
rc=0
start=$SECONDS
(cd "$scratch" && "$build/tests/fuzz/fuzz_$target" "${flags[@]}" "${extra[@]}" \
  "$scratch/new" "$corpus") >"$scratch/log" 2>&1 || rc=$?
elapsed=$((SECONDS - start))

crashes=()
for f in "$scratch"/artifacts/{crash,leak,timeout,oom}-*; do
  [ -f "$f" ] || continue
  mkdir -p "$found"
  cp "$f" "$found/"
  crashes+=("$found/$(basename "$f")")
done
if [ $keep -eq 1 ] && [ ${#crashes[@]} -eq 0 ]; then
  # Only the new inputs that add coverage join the committed corpus.
  "$build/tests/fuzz/fuzz_$target" -merge=1 "$corpus" "$scratch/new" >"$scratch/merge.log" 2>&1
fi

final=$(grep -E '^#[0-9]+[[:space:]]+DONE' "$scratch/log" | tail -1 || true)
[ -n "$final" ] || final=$(grep -E '^#[0-9]+[[:space:]]' "$scratch/log" | tail -1 || true)
stat() { sed -n "s/^stat::$1:[[:space:]]*//p" "$scratch/log" | tail -1; }
echo "$final"
echo "fuzz.sh: $target: $(stat number_of_executed_units) executions in ${elapsed}s" \
  "($(stat average_exec_per_sec)/s), $(stat new_units_added) new inputs," \
  "peak RSS $(stat peak_rss_mb) MB, ${#crashes[@]} crash(es)"
if [ $rc -ne 0 ] || [ ${#crashes[@]} -gt 0 ]; then
  grep -E 'ERROR|runtime error|fuzz check failed|terminate called|what\(\)|SUMMARY' \
    "$scratch/log" | head -20 || true
  tail -40 "$scratch/log" >&2
  for c in "${crashes[@]}"; do echo "fuzz.sh: crash input: $c"; done
  exit 1
fi
