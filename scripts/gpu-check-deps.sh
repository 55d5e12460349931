#!/usr/bin/env bash
# gpu-check-deps.sh DIR: the Debian 12 packages that scripts/gpu-check.sh needs on a machine
# that lacks them (the lent GPU machine has no yaml-cpp and no ISA-L, and may lack zlib's
# headers), fetched with apt-get download and unpacked with dpkg -x into DIR/yaml, DIR/zlib and
# DIR/isal, ready to carry
# beside the source tree (gpu-check.sh looks in ../deps, or GPU_CHECK_DEPS).
set -eu
dir=$1
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q libyaml-cpp0.7 libyaml-cpp-dev zlib1g zlib1g-dev libisal2 libisal-dev 2>/dev/null)
rm -rf "$dir/yaml" "$dir/zlib" "$dir/isal"
for d in "$tmp"/libyaml-cpp*.deb; do dpkg -x "$d" "$dir/yaml"; done
for d in "$tmp"/zlib1g*.deb; do dpkg -x "$d" "$dir/zlib"; done
for d in "$tmp"/libisal*.deb; do dpkg -x "$d" "$dir/isal"; done
# Only what a build needs: no documentation, no static archives.
rm -rf "$dir"/yaml/usr/share "$dir"/zlib/usr/share "$dir"/isal/usr/share "$dir"/isal/usr/bin
rm -f "$dir"/yaml/usr/lib/x86_64-linux-gnu/*.a "$dir"/zlib/usr/lib/x86_64-linux-gnu/*.a \
  "$dir"/isal/usr/lib/x86_64-linux-gnu/*.a
# zlib1g-dev's libz.so points to /lib/...: point it into DIR instead.
ln -sf ../../../lib/x86_64-linux-gnu/libz.so.1 "$dir/zlib/usr/lib/x86_64-linux-gnu/libz.so"
du -sh "$dir"
