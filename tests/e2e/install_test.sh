#!/usr/bin/env bash
# troupe as a package, from the tree already built: `cmake --install` into a scratch prefix,
# then examples/ configured and built on its own against that prefix with find_package(troupe)
# (as another project would) and its tests run; then `cpack -G DEB`, the packages' control
# fields, and their contents against the install's.
#   install_test.sh BUILD_DIR SOURCE_DIR CXX_COMPILER BUILD_TYPE
set -uo pipefail
build=$1
root=$2
cxx=$3
build_type=$4
source "$root/tests/lib/harness.sh"
prefix=$tmp/prefix

# timed WHAT COMMAND...: runs COMMAND, prints how long it took; on failure its output.
timed() {
  local what=$1 start=$SECONDS out
  shift
  if out=$("$@" 2>&1); then
    echo "$what: $((SECONDS - start)) s"
    pass
    return 0
  fi
  fail "$what: $*"$'\n'"$(tail -40 <<<"$out")"
  return 1
}

# has FILE PATTERN: FILE holds PATTERN (an extended regex).
has() {
  if grep -qE -- "$2" "$1"; then pass; else fail "$1 lacks '$2'"$'\n'"$(head -40 "$1")"; fi
}

timed "cmake --install" cmake --install "$build" --prefix "$prefix" || { report install; exit; }
for f in bin/troupe include/troupe/actors/run_job.hpp include/troupe/core/data/dataset.hpp \
  include/troupe/messages/interfaces.hpp lib/libtroupe_core.a lib/libtroupe_actors.a \
  lib/cmake/troupe/troupeConfig.cmake lib/cmake/troupe/troupeConfigVersion.cmake \
  lib/cmake/troupe/troupeTargets.cmake lib/cmake/troupe/troupe_imported.cmake; do
  if [ -f "$prefix/$f" ]; then pass; else fail "the install lacks $f"; fi
done
if find "$prefix/include" -name '*.cpp' | grep -q .; then fail "sources installed as headers"; else pass; fi
"$prefix/bin/troupe" --version >"$tmp/version.txt" 2>&1
has "$tmp/version.txt" "0\.[0-9]+\.[0-9]+"
# The Python module, where the build made one: importable from the install alone, and it plans.
if [ -d "$build/python/troupe" ]; then
  PYTHONPATH="$prefix/lib/python3/dist-packages" /usr/bin/python3 -c '
import troupe, sys
assert troupe.__file__.startswith(sys.argv[1]), troupe.__file__
print(troupe.__version__)
print(troupe.validate({"data": {"type": "synthetic"}, "training": {"steps": 3}}))' \
    "$prefix" >"$tmp/python.txt" 2>&1
  has "$tmp/python.txt" "^0\.[0-9]+\.[0-9]+$"
  has "$tmp/python.txt" "parameters"
fi

# The examples on their own: only the prefix tells CMake where troupe is.
examples=$tmp/examples
timed "configure examples/ against the install" cmake -S "$root/examples" -B "$examples" \
  -G Ninja -DCMAKE_BUILD_TYPE="$build_type" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_EXPORT_COMPILE_COMMANDS=ON &&
  timed "build examples/" cmake --build "$examples" -j "${TROUPE_JOBS:-$(nproc)}" &&
  timed "run examples/' tests" ctest --test-dir "$examples" --output-on-failure
has "$examples/CMakeCache.txt" "^troupe_DIR:PATH=$prefix/lib/cmake/troupe$"
# Headers from the install, never from the source tree.
has "$examples/compile_commands.json" "$prefix/include/troupe"
if grep -qE -- "-I *$root( |/)" "$examples/compile_commands.json"; then
  fail "the examples' build includes the source tree"
else
  pass
fi

# Debian packages: troupe (the program, Depends from dpkg-shlibdeps) and troupe-dev.
debs=$tmp/debs
if timed "cpack -G DEB" bash -c "cd '$build' && cpack -G DEB -B '$debs'"; then
  program=$(ls "$debs"/troupe_*.deb)
  dev=$(ls "$debs"/troupe-dev_*.deb)
  dpkg-deb -I "$program" >"$tmp/program.info"
  dpkg-deb -I "$dev" >"$tmp/dev.info"
  has "$tmp/program.info" "^ Package: troupe$"
  has "$tmp/program.info" "^ Depends: .*libtorch"
  has "$tmp/program.info" "^ Depends: .*libcaf"
  has "$tmp/dev.info" "^ Package: troupe-dev$"
  has "$tmp/dev.info" "^ Depends: troupe \(= [0-9.]+\), libcaf-dev, libtorch-dev"
  # Both packages together hold what the install put in place, under /usr.
  { dpkg-deb -c "$program"; dpkg-deb -c "$dev"; } | awk '$1 !~ /^d/ {print $6}' |
    sed 's|^\./usr/||' | sort >"$tmp/deb.files"
  (cd "$prefix" && find . -type f | sed 's|^\./||' | sort) >"$tmp/install.files"
  if diff "$tmp/install.files" "$tmp/deb.files" >"$tmp/files.diff"; then
    pass
  else
    fail "the packages' files differ from the install's:"$'\n'"$(head -20 "$tmp/files.diff")"
  fi
fi
report install_test
