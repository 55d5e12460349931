#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets of tests/fuzz with clang under AddressSanitizer +
# UBSan (build dir build-fuzz) and runs each for a bounded time, seeded from tests/data.
# Fails on any crash, leak, UB report or timeout; the input that caused it is saved in
# build-fuzz/crashes/<target>/ (copy it to tests/data/fuzz/<target>/ once fixed: the normal
# test suite replays that folder). Called by scripts/test.sh (DFTRACE_SKIP_FUZZ=1 skips).
#   scripts/fuzz.sh [TARGET...]           targets: line_parser member trace_file config event_rules
#   DFTRACE_FUZZ_SECONDS=60               time per target
#   DFTRACE_FUZZ_BUILD_DIR=build-fuzz
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${DFTRACE_FUZZ_SECONDS:-60}
dir=${DFTRACE_FUZZ_BUILD_DIR:-build-fuzz}
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(line_parser member trace_file config event_rules)
cc=$(command -v clang-14 || command -v clang || true)
cxx=$(command -v clang++-14 || command -v clang++ || true)
if [ -z "$cc" ] || [ -z "$cxx" ]; then
  echo "fuzz.sh: clang is not installed (scripts/setup-debian.sh test installs clang-14)" >&2
  exit 1
fi
echo "== fuzz build: clang, address,undefined + libFuzzer ($dir)"
CC=$cc CXX=$cxx cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFTRACE_FUZZ=ON \
  -DDFTRACE_SANITIZE=address,undefined -DCMAKE_CXX_FLAGS=-fno-sanitize-recover=all \
  -DCMAKE_C_FLAGS=-fno-sanitize-recover=all -DDFTRACE_BUILD_BENCH=OFF \
  -DDFTRACE_BUILD_EXAMPLES=OFF >/dev/null
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]/#/fuzz_}" >/dev/null
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# Seeds per target (folders that do not exist are left out).
seeds_for() {
  local d=tests/data
  case $1 in
    line_parser) echo "$d/fuzz/seeds/lines $d/fuzz/seeds/traces $d/dftracer $d/fuzz/line_parser" ;;
    member) echo "$d/fuzz/seeds/members $d/hostile $d/fuzz/member" ;;
    trace_file) echo "$d/fuzz/seeds/traces $d/hostile $d/dftracer $d/fuzz/trace_file" ;;
    config) echo "$d/fuzz/seeds/config $d/fuzz/config" ;;
    event_rules) echo "$d/fuzz/seeds/rules $d/fuzz/event_rules" ;;
  esac
}
summary=()
failed=0
for t in "${targets[@]}"; do
  corpus=$dir/corpus/$t        # what the fuzzer learns, kept between runs
  crashes=$dir/crashes/$t
  mkdir -p "$corpus" "$crashes"
  seeds=()
  for s in $(seeds_for "$t"); do [ -e "$s" ] && seeds+=("$s"); done
  log=$dir/fuzz-$t.log
  echo "== fuzz $t: ${secs}s, seeds: ${seeds[*]}"
  status=0
  "$dir/tests/fuzz/fuzz_$t" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
    -close_fd_mask=3 -print_final_stats=1 -artifact_prefix="$crashes/" \
    "$corpus" "${seeds[@]}" >"$log" 2>&1 || status=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -E '^#[0-9]+' "$log" | grep -o 'cov: [0-9]*' | tail -1 | cut -d' ' -f2)
  ft=$(grep -E '^#[0-9]+' "$log" | grep -o 'ft: [0-9]*' | tail -1 | cut -d' ' -f2)
  if [ "$status" != 0 ]; then
    failed=1
    echo "   FAILED (status $status): see $log; the input is in $crashes/" >&2
    grep -E 'ERROR|runtime error|SUMMARY|Test unit written' "$log" | head -20 >&2 || true
  fi
  line=$(printf '%-12s %12s execs  cov %6s  ft %7s  %s' "$t" "${execs:-?}" "${cov:-?}" "${ft:-?}" \
    "$([ "$status" = 0 ] && echo ok || echo CRASH)")
  echo "   $line"
  summary+=("$line")
done
echo "== fuzz summary ($(date -u +%Y-%m-%dT%H:%MZ), ${secs}s each)"
printf '   %s\n' "${summary[@]}"
exit $failed
