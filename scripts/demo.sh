#!/usr/bin/env bash
# demo.sh: builds dftrace, runs the training-loop example (examples/cpp/train_loop.cpp) with
# tracing on, shows the first lines of the trace it wrote and ends with `dftrace stat` on it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh core
build=${DFTRACE_BUILD_DIR:-build}
log=$(mktemp -t dftrace-demo.XXXXXX)
# Long steps say what they do; their own output goes to a log, shown only if they fail.
step() {
  local what=$1
  shift
  echo "== $what"
  if ! "$@" >"$log" 2>&1; then
    cat "$log" >&2
    echo "demo.sh: failed while $what (log above)" >&2
    exit 1
  fi
}
step "configuring (cmake, build directory $build)..." \
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
step "building the library, the example and the dftrace command..." \
  cmake --build "$build" -j"$(nproc)" --target train_loop dftrace_cli
rm -f "$log"
out=$(mktemp -d -t dftrace-demo-trace.XXXXXX)
echo "== running examples/cpp/train_loop.cpp with DFTRACE_ENABLE=1 DFTRACE_LOG_FILE=$out/trace"
DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$out/trace" "$build/examples/train_loop"
f=$(ls "$out"/*.pfw.gz)
echo "== the trace: $f ($(stat -c %s "$f") bytes compressed, $(zcat "$f" | wc -l) lines)"
echo "== its first 12 lines (zcat $f | head -12):"
zcat "$f" | sed -n 1,12p  # sed reads to the end: no SIGPIPE for zcat under pipefail
echo "== dftrace stat $f  (the dftrace command: $build/tools/dftrace)"
"$build/tools/dftrace" stat "$f"
echo "== the trace is in $f; more: $build/tools/dftrace --help, docs/format.md"
