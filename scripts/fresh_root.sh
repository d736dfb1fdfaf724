#!/usr/bin/env bash
# The README's two commands on a machine with nothing on it: a fresh Debian bookworm root made by
# debootstrap (--variant=minbase: the base system only), the committed tree copied in, then
# ./scripts/run_default.sh and ./scripts/test.sh run there as root with CI=true (a test that
# skips for a missing tool fails). Prints the minutes each command took and exits with the first
# failure's status. Not part of ctest: it takes as long as both commands from nothing (about
# half an hour on 2 cores) and needs root and Debian's archive.
#   scripts/fresh_root.sh [ROOT]     ROOT defaults to /var/tmp/troupe-fresh-root (replaced)
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
target=${1:-/var/tmp/troupe-fresh-root}
mirror=${TROUPE_MIRROR:-http://deb.debian.org/debian}
[ "$(id -u)" -eq 0 ] || { echo "fresh_root: needs root (debootstrap, chroot, mounts)"; exit 2; }

if ! command -v debootstrap >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null
fi

mounted=()
cleanup() {
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# A root left by an interrupted run may still have the host's /dev, /proc and /sys mounted in
# it: unmount those first, and never let rm cross into another file system (through a bind of
# /dev it would delete the host's device nodes).
unmount_under() {
  local m
  for m in $(awk -v t="$1" '$2 == t || index($2, t "/") == 1 { print $2 }' /proc/mounts |
             sort -r); do
    umount -l "$m" || { echo "fresh_root: cannot unmount $m; remove it by hand"; exit 1; }
  done
}
unmount_under "$target"
rm -rf --one-file-system "$target"
echo "fresh_root: debootstrap --variant=minbase bookworm $target"
debootstrap --variant=minbase bookworm "$target" "$mirror" >"$target.debootstrap.log" 2>&1 ||
  { tail -20 "$target.debootstrap.log"; exit 1; }
# The security and update suites, as a Debian installation has them.
cat >"$target/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
EOF
cp /etc/resolv.conf "$target/etc/resolv.conf"
# The root a mount point of its own, as / is on a machine: `unshare -m` (e2e.disk_full's tmpfs)
# makes / private first, which a chroot's plain directory refuses.
mount --bind "$target" "$target"
mounted+=("$target")
for m in proc sys dev dev/pts dev/shm; do
  mkdir -p "$target/$m"
  case $m in
    proc) mount -t proc proc "$target/proc" ;;
    sys) mount -t sysfs sys "$target/sys" ;;
    dev/shm) mount -t tmpfs shm "$target/dev/shm" ;;
    *) mount --bind "/$m" "$target/$m" ;;
  esac
  mounted+=("$target/$m")
done
mkdir -p "$target/root/troupe"
git -C "$repo" archive HEAD | tar -x -C "$target/root/troupe"

run_in_root() {  # run_in_root NAME COMMAND: times COMMAND in the root's copy of the tree
  local start=$SECONDS status=0
  chroot "$target" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin CI=true \
    bash -c "cd /root/troupe && $2" >"$target.$1.log" 2>&1 || status=$?
  local minutes
  minutes=$(awk "BEGIN { printf \"%.1f\", ($SECONDS - $start) / 60 }")
  echo "fresh_root: $2: exit $status after $minutes min (log: $target.$1.log)"
  tail -4 "$target.$1.log" | sed 's/^/  /'
  return $status
}
status=0
run_in_root run_default ./scripts/run_default.sh || status=$?
run_in_root test ./scripts/test.sh || { [ $status -ne 0 ] || status=$?; }
grep -E "tests passed|Skipped|Failed|Not Run" "$target.test.log" | sed 's/^/  /' || true
exit $status
