#!/usr/bin/env bash
# tools_bench.sh: end-to-end speed of the dftrace command on about 1 GB of uncompressed trace
# in 16 files, next to what a user would do otherwise (zcat | wc -l, zcat | jq -c), in one run.
# Usage: bench/tools_bench.sh [BUILD_DIR] [WORK_DIR]   (env: FILES=16 EVENTS=330000 REPEAT=3,
#        NO_DT=1 for DFTracer-1.0.8-like files: one gzip member each, no DT fields)
# Prints a Markdown table: wall seconds (best of REPEAT), CPU seconds, MB/s of uncompressed text.
set -euo pipefail
source "$(dirname "$0")/tools_common.sh"
files=${FILES:-16}
events=${EVENTS:-330000}
repeat=${REPEAT:-3}
if [ ! -f "$work/r$((files - 1)).pfw.gz" ]; then
  for i in $(seq 0 $((files - 1))); do
    "$gen" "$work/r$i.pfw.gz" --events "$events" --pid $((5000 + i)) --seed "$i" --threads 2 \
      ${NO_DT:+--no-dt}
  done
fi
inputs=("$work"/r*.pfw.gz)
calc() { awk "BEGIN { print $1 }"; }
text_bytes=$(DFTRACE_NO_PROGRESS=1 "$cli" stat --fast --json "${inputs[@]}" | jq '.text_bytes')
comp_bytes=$(cat "${inputs[@]}" | wc -c)
echo "# $(date -u +%F) $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# ${#inputs[@]} files, $((comp_bytes / 1000000)) MB compressed, $((text_bytes / 1000000)) MB of text"
# How much of the machine this run gets: one gzip -1 alone, then two at once (on a shared VM
# the second core is often partly taken; 1.0 = two free cores, 2.0 = one core in effect).
sample=$work/calibrate.txt
[ -f "$sample" ] || zcat "${inputs[0]}" > "$sample"
t0=$(date +%s.%N); gzip -1 -c "$sample" > /dev/null; t1=$(date +%s.%N)
gzip -1 -c "$sample" > /dev/null & gzip -1 -c "$sample" > /dev/null & wait
t2=$(date +%s.%N)
echo "# two gzip -1 at once take $(calc "($t2 - $t1) / ($t1 - $t0)") x the time of one"
echo
echo "| command | wall s | CPU s | MB/s (text) |"
echo "| --- | ---: | ---: | ---: |"
measure() {
  local label=$1 cmd=$2 n=${3:-$repeat} best="" cpu=""
  for _ in $(seq "$n"); do
    local t0 t1 c0 c1
    c0=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
    t0=$(date +%s.%N)
    ( export DFTRACE_NO_PROGRESS=1; eval "$cmd" ) > /dev/null 2>&1 || echo "failed: $cmd" >&2
    t1=$(date +%s.%N)
    local wall cpus
    wall=$(calc "$t1 - $t0")
    # CPU time of the children of this shell (user + system), from /proc/self/stat.
    c1=$(awk '{print $14+$15+$16+$17}' /proc/$$/stat)
    cpus=$(calc "($c1 - $c0) / $(getconf CLK_TCK)")
    if [ -z "$best" ] || [ "$(calc "$wall < $best")" = 1 ]; then best=$wall; cpu=$cpus; fi
  done
  printf "| %s | %.2f | %.2f | %.0f |\n" "$label" "$best" "$cpu" "$(calc "$text_bytes / $best / 1000000")"
}
in="${inputs[*]}"
measure '`zcat | wc -l`' "zcat $in | wc -l"
measure '`dftrace stat --fast` (DT fields only)' "$cli stat --fast $in"
measure '`dftrace stat`' "$cli stat $in"
measure '`dftrace validate`' "$cli validate $in"
measure '`dftrace cat` (no filter) `> /dev/null`' "$cli cat $in"
measure '`dftrace merge -o OUT.pfw.gz`' "$cli merge $in -o $work/merged.pfw.gz"
measure '`dftrace convert --to dftracer-2.0.2 -o OUT.pfw.gz`' \
  "$cli convert $in --to dftracer-2.0.2 -o $work/converted.pfw.gz"
# jq cannot read the '[' line; users drop it first. (SKIP_JQ=1: it takes minutes.)
[ -n "${SKIP_JQ:-}" ] || measure "\`zcat | grep -v '^[][]' | jq -c .\`" "zcat $in | grep -v '^[][]' | jq -c ." 1
