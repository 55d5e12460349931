#!/usr/bin/env bash
# analyze_bench.sh: end-to-end speed of `dftrace analyze --json` (read, parse, analyse) on one
# core (DFTRACE_TOOL_THREADS=1), in events per CPU second and per wall second, with the peak
# resident set: on a synthetic dftrace run (gen_trace, one file per rank) and on the DFTracer
# cm1 traces of tests/data/dftracer (repeated REPEAT times, they are small).
# With DIFF=1, also `dftrace diff` of that run against a second one (other seeds, in WORK_DIR-new)
# and its time over the time of analysing one.
# Usage: bench/analyze_bench.sh [BUILD_DIR] [WORK_DIR]   (env: RANKS=4 EVENTS=1000000 REPEAT=3
#        DIFF=0 CM1=1)
# Prints a Markdown table: the best of REPEAT runs by CPU time.
set -euo pipefail
source "$(dirname "$0")/tools_common.sh"
[ -x /usr/bin/time ] || { echo "install time (/usr/bin/time) first" >&2; exit 2; }
ranks=${RANKS:-4}
events=${EVENTS:-1000000}
repeat=${REPEAT:-3}
generate() {  # DIR SEED_BASE
  [ -f "$1/r$((ranks - 1)).pfw.gz" ] && return
  mkdir -p "$1"
  for i in $(seq 0 $((ranks - 1))); do
    "$gen" "$1/r$i.pfw.gz" --events "$events" --pid $((7000 + i)) --rank "$i" \
      --seed $(($2 + i)) --threads 2
  done
}
generate "$work" 0
calc() { awk "BEGIN { print $1 }"; }
echo "# $(date -u '+%F %H:%M') UTC, $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
echo "| input | events | CPU s | M events / CPU s | wall s | peak RSS MiB |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
cmd=(analyze --json --allow-damaged)
# inputs.events, from the head of the document (the step items of a large run are 100s of MB)
count_events() {
  (
    set +o pipefail  # analyze ends on SIGPIPE once the head is read
    DFTRACE_NO_PROGRESS=1 "$cli" analyze --json --allow-damaged "$@" | head -c 2000 |
      grep -o '"events":[0-9]*' | head -1 | cut -d: -f2
  )
}
measure() {
  local label=$1
  shift
  local n best_cpu="" best_wall="" rss=""
  n=${EVENTS_OVERRIDE:-$(count_events "$@")}
  for _ in $(seq "$repeat"); do
    local out cpu wall kb
    out=$( { DFTRACE_TOOL_THREADS=1 DFTRACE_NO_PROGRESS=1 /usr/bin/time -f '%U %S %e %M' \
      "$cli" "${cmd[@]}" "$@" > /dev/null; } 2>&1 | tail -1)
    cpu=$(echo "$out" | awk '{print $1 + $2}')
    wall=$(echo "$out" | awk '{print $3}')
    kb=$(echo "$out" | awk '{print $4}')
    if [ -z "$best_cpu" ] || [ "$(calc "$cpu < $best_cpu")" = 1 ]; then
      best_cpu=$cpu best_wall=$wall rss=$kb
    fi
  done
  printf "| %s | %d | %.2f | %.2f | %.2f | %.0f |\n" "$label" "$n" "$best_cpu" \
    "$(calc "$n / $best_cpu / 1000000")" "$best_wall" "$(calc "$rss / 1024")"
  last_cpu=$best_cpu
}
measure "gen_trace: $ranks ranks x $events events" "$work"/r*.pfw.gz
if [ "${DIFF:-0}" = 1 ]; then
  one=$last_cpu
  generate "${work%/}-new" 1000
  # the events of both runs
  n1=$(count_events "$work"/r*.pfw.gz)
  n2=$(count_events "${work%/}-new"/r*.pfw.gz)
  cmd=(diff --json)
  EVENTS_OVERRIDE=$((n1 + n2)) measure "diff of two such runs" "$work" "${work%/}-new"
  echo
  echo "diff / analyze (CPU): $(calc "$last_cpu / $one")"
  cmd=(analyze --json --allow-damaged)
fi
[ "${CM1:-1}" = 1 ] || exit 0
# the cm1 traces, listed 20 times over: analyze reads each file each time it is named (the
# processes then meet again, so the groups are the same but the events count 20 times)
cm1=()
for _ in $(seq 20); do cm1+=(tests/data/dftracer/cm1-*.pfw.gz); done
measure "DFTracer cm1, 8 ranks, each file 20 times" "${cm1[@]}"
