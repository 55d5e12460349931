#!/usr/bin/env bash
# timing-tests.sh N [NAME...]: runs each timing-sensitive test (a test that compares times) N
# times, round-robin (every test gets its k-th run before any gets its k+1-th), and reports runs
# and failures per test. Meant to be run on a loaded machine:
#   scripts/under-load.sh scripts/timing-tests.sh 100
# NAME: one of the names below (default: all). BUILD=dir: the build tree (default build).
# The summary is printed at the end and kept up to date in $BUILD/timing-tests/summary.txt; the
# output of each failed run is kept in $BUILD/timing-tests/<name>.<run>.log.
set -uo pipefail
cd "$(dirname "$0")/.."
src=$PWD
build=$(cd "${BUILD:-build}" && pwd) || { echo "no build tree ${BUILD:-build}" >&2; exit 2; }
n=${1:-}
[[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "usage: scripts/timing-tests.sh N [NAME...]" >&2; exit 2; }
shift
py=/usr/bin/python3
pyt=("$py" -m pytest -q -p no:cacheprovider -x)
core="$src/tests/integration/core"
export DFTRACE_TEST_BIN="$build/tests/integration/core"
export DFTRACE_TEST_FORTRAN_BIN="$build/tests/integration/fortran"
export PYTHONPATH="$build/bindings/python" PYTHONDONTWRITEBYTECODE=1 DFTRACE_BUILD_DIR="$build"

# name -> command (run from the build tree). Each is the part of a suite that compares times.
declare -A cmd
names=(tree.metadata_mode first_call writer.clock tickmap compat fortran mixed mpi python.timing ring
       torch.clock)
cmd[tree.metadata_mode]="${pyt[*]} $core/test_tree.py -k metadata_mode"
cmd[first_call]="${pyt[*]} $core/test_first_call.py"
cmd[writer.clock]="${pyt[*]} $core/test_writer.py -k 'times_agree or nest_concurrently or clock_maps'"
cmd[tickmap]="$build/tests/unit/unit_tests --gtest_brief=1 --gtest_filter='TickMap.*'"
cmd[compat]="ctest --test-dir $build -R '^integration\\.dftracer_compat\$' --output-on-failure"
cmd[fortran]="ctest --test-dir $build -R '^integration\\.fortran\\.(trace|threads)\$' --output-on-failure"
cmd[mixed]="ctest --test-dir $build -R '^integration\\.mixed\\.' --output-on-failure"
cmd[mpi]="ctest --test-dir $build -R '^mpi_(train|skew|python|fortran)\$' --output-on-failure"
cmd[ring]="ctest --test-dir $build -R '^(integration\\.ring|python_test_ring|integration\\.fortran\\.ring)\$' --output-on-failure"
cmd[torch.clock]="ctest --test-dir $build -R '^python_test_torch_distributed\$' --output-on-failure"
cmd[python.timing]="${pyt[*]} $src/tests/python/test_api.py $src/tests/python/test_defects.py $src/tests/python/test_emission.py -k 'decorator_and_context or update_levels or generators_and_async or recursion or parenthesised or training_loop_structure or metadata_mode'"

if [ $# -gt 0 ]; then
  for a in "$@"; do [ -n "${cmd[$a]:-}" ] || { echo "unknown test '$a' (known: ${names[*]})" >&2; exit 2; }; done
  names=("$@")
fi
out="$build/timing-tests"
mkdir -p "$out"
declare -A runs fails
for t in "${names[@]}"; do runs[$t]=0; fails[$t]=0; done
summary() {
  {
    echo "timing-tests: $(date -u '+%Y-%m-%d %H:%M UTC'), $n runs asked, load average $(cut -d' ' -f1-3 /proc/loadavg)"
    printf '%-20s %6s %8s\n' test runs failures
    for t in "${names[@]}"; do printf '%-20s %6d %8d\n' "$t" "${runs[$t]}" "${fails[$t]}"; done
  } >"$out/summary.txt"
}
for ((k = 1; k <= n; ++k)); do
  for t in "${names[@]}"; do
    log="$out/$t.$k.log"
    if (cd "$build" && eval "${cmd[$t]}") >"$log" 2>&1; then
      rm -f "$log"
    else
      fails[$t]=$((fails[$t] + 1))
      echo "timing-tests: $t failed on run $k (log: $log)" >&2
    fi
    runs[$t]=$((runs[$t] + 1))
  done
  summary
done
cat "$out/summary.txt"
total=0
for t in "${names[@]}"; do total=$((total + fails[$t])); done
[ "$total" -eq 0 ]
