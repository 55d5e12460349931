#!/usr/bin/env bash
# telemetry_cost.sh: the CPU time of telemetry.interval's sampling thread, as a share of one core.
# Runs tests/integration/telemetry's telemetry_prog asleep for SECONDS under the interval, reads
# the thread's time on a CPU just before it ends (/proc/<pid>/task/<tid>/schedstat, nanoseconds:
# the clock-tick counts of its stat miss a thread that runs for well under a tick at a time), and
# divides by the time it ran. Usage: bench/telemetry_cost.sh [BUILD_DIR] [SECONDS] [INTERVAL]
set -euo pipefail
build=${1:-build}
seconds=${2:-30}
interval=${3:-100ms}
prog=$build/tests/integration/telemetry/telemetry_prog
[ -x "$prog" ] || { echo "telemetry_cost.sh: build telemetry_prog first" >&2; exit 2; }
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
DFTRACE_ENABLE=1 DFTRACE_LOG_FILE=$dir/trace DFTRACE_TELEMETRY_INTERVAL=$interval \
  "$prog" sleep $((seconds * 1000)) &
pid=$!
sleep 1
# The sampler names itself; a thread it starts (a compressor helper of the writer, when its
# write hands a chunk over) inherits the name, and comes later: the lowest such tid is it.
tid=""
for t in $(ls /proc/$pid/task | sort -n); do
  if [ -z "$tid" ] && [ "$(cat "/proc/$pid/task/$t/comm")" = "dftrace-telem" ]; then tid=$t; fi
done
[ -n "$tid" ] || { echo "telemetry_cost.sh: no sampling thread in $pid" >&2; exit 1; }
start=$(cut -d' ' -f22 /proc/$pid/stat)  # the process's start, in clock ticks since boot
sleep $((seconds - 2))
oncpu=$(cut -d' ' -f1 "/proc/$pid/task/$tid/schedstat")
# Every thread but the sleeping main one: the sampler, and the writer formatting and compressing
# its lines.
all=0
for t in /proc/$pid/task/*; do
  [ "${t##*/}" = "$pid" ] || all=$((all + $(cut -d' ' -f1 "$t/schedstat")))
done
up=$(cut -d' ' -f1 /proc/uptime)
wait $pid
hz=$(getconf CLK_TCK)
awk -v ns="$oncpu" -v all="$all" -v hz="$hz" -v st="$start" -v up="$up" -v iv="$interval" '
  BEGIN { cpu = ns / 1e9; ran = up - st / hz;
          printf "interval %s: sampler CPU %.4f s over %.1f s = %.3f%% of one core\n", iv, cpu, ran, 100 * cpu / ran;
          printf "with the writer (every dftrace thread): %.4f s = %.3f%% of one core\n", all / 1e9, 100 * all / 1e9 / ran }'
samples=$(zcat "$dir"/*.pfw.gz | grep -c '"name":"process","cat":"sys"' || true)
echo "process samples written: $samples"
