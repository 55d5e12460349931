#!/usr/bin/env bash
# install_test.sh: cmake --install (into a temporary prefix), then a CMake consumer
# (find_package) and a C program built with pkg-config alone; both run and write a trace with
# their event. Usage: install_test.sh BUILD_DIR SOURCE_DIR (this folder).
set -euo pipefail
trap 'echo "install_test.sh: failed at line $LINENO" >&2' ERR
build=$1 src=$2
# grep -c reads all its input: with grep -q, zcat could die of SIGPIPE and pipefail would fail
# the test although the line is there.
has_line() { [ "$(zcat "$1" | grep -c "$2")" -ge 1 ]; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The build tree's install manifests are the user's record of what they installed: this
# install (tests/cmake/install_tree.cmake) leaves them alone, which is checked at the end.
manifests() { { ls -l --time-style=+%s.%N "$build"/install_manifest*.txt 2>/dev/null || true; } | md5sum; }
before=$(manifests)
cmake -DBUILD_DIR="$build" -DPREFIX="$tmp/prefix" -DWORK="$tmp/work" \
  -P "$src/../../cmake/install_tree.cmake" >"$tmp/install.log" 2>&1 || { cat "$tmp/install.log"; exit 1; }
libdir=$(ls -d "$tmp"/prefix/lib*/ | head -1)
test -f "$tmp/prefix/include/dftrace/dftrace.h"
test -f "$tmp/prefix/include/dftracer/dftracer.h"
# The plug-ins' private contract is not part of the installed API.
test ! -e "$tmp/prefix/include/dftrace/plugin.h" || { echo "plugin.h is installed" >&2; exit 1; }
test -f "$tmp/prefix/share/dftrace/dftrace.yaml"
cmake -S "$src/consumer" -B "$tmp/cb" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/cb" >/dev/null
LD_LIBRARY_PATH="$libdir" DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$tmp/out/a" "$tmp/cb/consumer"
has_line "$(ls "$tmp"/out/a-consumer-*-app.pfw.gz)" '"name":"forward","cat":"compute"'
# The YAML parser is a component installed beside the library and opened from there when a
# configuration file is read (src/config/yaml_tree.hpp).
test -f "$libdir/libdftrace_yaml.so"
printf 'output:\n  prefix: %s\n' "$tmp/out/y" >"$tmp/conf.yaml"
LD_LIBRARY_PATH="$libdir" DFTRACE_ENABLE=1 DFTRACE_CONFIG="$tmp/conf.yaml" "$tmp/cb/consumer"
has_line "$(ls "$tmp"/out/y-consumer-*-app.pfw.gz)" '"name":"forward","cat":"compute"'
export PKG_CONFIG_PATH="$libdir/pkgconfig"
# shellcheck disable=SC2046
cc -std=c99 "$src/consumer/consumer.c" $(pkg-config --cflags --libs dftrace) -o "$tmp/cc"
LD_LIBRARY_PATH="$libdir" DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$tmp/out/b" "$tmp/cc"
has_line "$(ls "$tmp"/out/b-cc-*-app.pfw.gz)" '"name":"backward","cat":"compute"'
[ "$(manifests)" = "$before" ] || { echo "the build tree's install_manifest*.txt changed" >&2; exit 1; }
echo "install, find_package and pkg-config consumers: ok"
