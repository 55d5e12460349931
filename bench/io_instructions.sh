#!/usr/bin/env bash
# io_instructions.sh BUILD: what libdftrace_io adds to a 4 KiB pread, in instructions, which
# other work on the machine does not change (io_bench.sh measures time, which it does).
# valgrind's callgrind counts io_bench's instructions at two numbers of calls; the difference
# divided by the difference of calls is the instructions per call, start-up cancelled. Per
# case: the calling thread's instructions per call beyond the bare call in a multi-threaded
# process (the C library's own pread takes a longer path once a second thread exists, as the
# writer thread is in every traced process), and the rest's (the writer formatting and
# compressing the event) per call.
# The "aggregated" row is the traced case with DFTRACE_AGGREGATION=1.
# io_instructions.sh BUILD fgetc|fputc: the same for a stream's fgetc or fputc of one character
# (io_bench's stream loops), which libdftrace_io folds per stream instead of an event per call.
set -euo pipefail
build=$1 op=${2:-pread}
lib=$build/libdftrace_io.so prog=$build/bench/io_bench
[ -f "$lib" ] && [ -x "$prog" ] || { echo "io_instructions: build $build first" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "io_instructions: valgrind is missing" >&2; exit 2; }
n1=20000 n2=40000
calls() { echo "$1 * 51 / 10" | bc; }  # io_bench makes CALLS/10 warm-up calls and 5 loops of CALLS
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
mkdir "$dir/data" "$dir/other" "$dir/traces"
head -c $((16 * 4096)) /dev/urandom > "$dir/data/file.bin"
# count N ENV...: "calling-thread others" instructions of one run: the inclusive count of
# io_bench's main() (the calls), and everything else of every thread but the process's start
# (the writer's work, wherever it ran: finalize at exit formats what the writer thread had not)
count() {
  local n=$1
  shift
  rm -f "$dir"/traces/* "$dir"/cg*
  env -u DFTRACE_ENABLE "$@" valgrind --tool=callgrind --separate-threads=yes \
    --callgrind-out-file="$dir/cg" "$prog" "$dir/data/file.bin" "$n" mt $op >/dev/null 2>&1
  local main=0 all=0 f t
  for f in "$dir"/cg-*; do
    t=$(callgrind_annotate "$f" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
    all=$((all + t))
    if [ "${f##*-}" = 01 ]; then
      main=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
        awk '/io_bench.c:main / {gsub(",", "", $1); print $1; exit}')
    fi
  done
  # the writer's part in formatting (member_builder::add_records) and compressing (ISA-L,
  # libdeflate or zlib), inclusive, every thread
  local fmt=0 zip=0 a b
  for f in "$dir"/cg-*; do
    a=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
      awk '/member_builder::add_records/ && $1 ~ /^[0-9,]+$/ {gsub(",", "", $1); print $1; exit}')
    b=$(callgrind_annotate --inclusive=yes "$f" 2>/dev/null |
      awk '/member_encoder::encode\(/ && $1 ~ /^[0-9,]+$/ {gsub(",", "", $1); print $1; exit}')
    fmt=$((fmt + ${a:-0})) zip=$((zip + ${b:-0}))
  done
  echo "$main $((all - main)) $fmt $zip"
}
# per_call ENV...: "calling-thread writer format compress" instructions per call
per_call() {
  local a b i out=""
  read -r -a a <<<"$(count $n1 "$@")"
  read -r -a b <<<"$(count $n2 "$@")"
  local d=$(($(calls $n2) - $(calls $n1)))
  for i in 0 1 2 3; do out+="$(echo "scale=1; (${b[$i]} - ${a[$i]}) / $d" | bc) "; done
  echo "$out"
}
on=(DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$dir/traces/t" LD_PRELOAD="$lib")
echo "== $(date -u +%Y-%m-%d\ %H:%M) UTC: instructions per $op (callgrind; $n1 and $n2 calls)"
read -r -a bare <<<"$(per_call env)"
printf "    %-30s %10s %12s %18s\n" case "added" "writer" "(format, compress)"
printf "    %-30s %10s %12s\n" "bare (libc: ${bare[0]})" 0 "${bare[1]}"
row() {
  local label=$1 v
  shift
  read -r -a v <<<"$(per_call env "$@")"
  printf "    %-30s %10s %12s %18s\n" "$label" "$(echo "${v[0]} - ${bare[0]}" | bc)" "${v[1]}" \
    "(${v[2]}, ${v[3]})"
}
row "traced" "${on[@]}" DFTRACE_IO_DATA_DIR="$dir/data"
row "outside the data dirs" "${on[@]}" DFTRACE_IO_DATA_DIR="$dir/other"
row "io.enable false" "${on[@]}" DFTRACE_IO_ENABLE=false
# aggregation mode: the writer folds each event into its interval's record (the "format"
# column: add_records, which calls aggregator::add) instead of formatting it
row "aggregated" "${on[@]}" DFTRACE_IO_DATA_DIR="$dir/data" DFTRACE_AGGREGATION=1
