#!/usr/bin/env bash
# test.sh: the whole test suite on a fresh Debian 12 machine: installs what is missing,
# builds everything (Release with debug info) and runs every test through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-debian.sh test
build=${DFTRACE_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFTRACE_BUILD_BENCH=ON >/dev/null
cmake --build "$build" -j"$(nproc)"
(cd "$build" && ctest --output-on-failure -j"$(nproc)" --timeout 600 "$@")
# The core under AddressSanitizer+UBSan and ThreadSanitizer (set DFTRACE_SKIP_SANITIZERS=1 to skip locally).
if [ "${DFTRACE_SKIP_SANITIZERS:-0}" != 1 ]; then
  scripts/sanitize.sh
fi
# The readers' fuzz targets, each for a bounded time (DFTRACE_FUZZ_SECONDS, default 60);
# DFTRACE_SKIP_FUZZ=1 skips them, and says so.
if [ "${DFTRACE_SKIP_FUZZ:-0}" != 1 ]; then
  scripts/fuzz.sh
else
  echo "fuzz: SKIPPED (DFTRACE_SKIP_FUZZ=1): the fuzz targets did not run"
fi
