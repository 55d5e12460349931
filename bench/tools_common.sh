# tools_common.sh: sourced by analyze_bench.sh and tools_bench.sh, with their arguments
# [BUILD_DIR] [WORK_DIR]: moves to the repository, and sets $build (default build), $work
# (default a new temporary folder, created), $cli (the dftrace command) and $gen (gen_trace).
cd "$(dirname "$0")/.."
build=${1:-build}
work=${2:-$(mktemp -d)}
cli=$build/tools/dftrace
gen=$build/tests/tools/gen_trace
[ -x "$cli" ] && [ -x "$gen" ] || { echo "build dftrace_cli and gen_trace first" >&2; exit 2; }
mkdir -p "$work"
