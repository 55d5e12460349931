#!/usr/bin/env bash
# demo.sh: builds dftrace and runs the training-loop example, then shows what it wrote.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh core
build=${DFTRACE_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j"$(nproc)" --target train_loop >/dev/null
out=$(mktemp -d)
echo "== running examples/cpp/train_loop.cpp with DFTRACE_ENABLE=1, writing to $out"
DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$out/trace" "$build/examples/train_loop"
f=$(ls "$out"/*.pfw.gz)
echo "== $f: $(stat -c %s "$f") bytes compressed, $(zcat "$f" | wc -l) lines"
echo "== the first 12 lines:"
zcat "$f" | head -12
echo "== events per category and name:"
zcat "$f" | grep '"ph":"X"' | sed -E 's/.*"name":"([^"]*)","cat":"([^"]*)".*/\2 \1/' | sort | uniq -c | sort -rn
