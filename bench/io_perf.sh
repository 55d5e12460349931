#!/usr/bin/env bash
# io_perf.sh BUILD [FILES] [FREQ]: where I/O tracing's *time* goes (io_instructions.sh and
# io_worker_instructions.sh count instructions, which are not time: compression runs many bytes
# per instruction, the hand-off to the writer thread costs cache misses and the kernel's
# scheduling). perf samples every thread of bench/io_worker (a forked child loading FILES files
# as numpy.load does) on the kernel's cpu-clock timer (no hardware counter needed, so it works
# in a VM), untraced and traced; the samples tracing added are grouped by symbol into parts:
# compressing, a file's first open, formatting, the calling thread's event, the kernel, the
# C library (locks, allocator, its multi-threaded system-call path), the rest.
set -euo pipefail
build=$1 files=${2:-20000} freq=${3:-20000}
prog=$build/bench/io_worker lib=$build/libdftrace_io.so
[ -x "$prog" ] && [ -f "$lib" ] || { echo "io_perf: build $build first" >&2; exit 2; }
command -v perf >/dev/null || { echo "io_perf: perf is missing (Debian: linux-perf)" >&2; exit 2; }
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
mkdir "$dir/data" "$dir/traces"
"$prog" "$dir/data" "$files" exit >/dev/null 2>&1  # the files, so that both runs only read them
profile() {  # OUT ENV...: perf's samples by DSO and symbol, one "samples dso symbol" per line
  local out=$1
  shift
  rm -f "$dir"/traces/*
  env -u DFTRACE_ENABLE "$@" perf record -q -e cpu-clock -F "$freq" -o "$dir/$out.data" -- \
    "$prog" "$dir/data" "$files" exit >/dev/null 2>&1
  perf report -i "$dir/$out.data" --no-children --sort dso,sym --stdio -F sample,dso,sym \
    2>/dev/null | grep -v '^#' | grep -v '^$' > "$dir/$out.txt"
}
echo "== $(date -u +%Y-%m-%d\ %H:%M) UTC: io_worker, $files files, perf cpu-clock at $freq Hz"
profile untraced env
profile traced env DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$dir/traces/t" \
  DFTRACE_IO_DATA_DIR="$dir/data" LD_PRELOAD="$lib"
python3 - "$dir/untraced.txt" "$dir/traced.txt" <<'EOF'
import collections, re, sys

def load(path):
    d = collections.Counter()
    for line in open(path):
        m = re.match(r'\s*(\d+)\s+(\S+)\s+\[.\]\s+(.*)', line)
        if m:
            d[(m.group(2), m.group(3).strip())] += int(m.group(1))
    return d

PARTS = [  # (part, what a DSO or symbol name contains), the first that matches
    ("compressing", ["libisal", "libdeflate", "libz.so", "member_encoder", "crc32"]),
    ("first open (path rules, hash, FH line)",
     ["hash_define", "md5", "dftracer_hash", "defined_hashes", "meta_line", "metadata_line",
      "escape_json", "traced_file", "absolute_path", "traced_path", "traced_opening",
      "normalise", "path_pattern"]),
    ("formatting", ["format_", "write_u64", "write_i64", "put", "to_ns", "add_records",
                    "member_builder", "template"]),
    ("calling thread's event", ["dftrace_leaf", "libdftrace_io", "dftrace_region",
                                "out_of_line", "rdtsc"]),
    ("kernel", ["[kernel"]),
    ("C library (locks, allocator, system-call path)", ["libc.so", "libstdc++", "ld-linux"]),
]

def part(dso, sym):
    text = dso + " " + sym
    for name, keys in PARTS:
        if any(k in text for k in keys):
            return name
    return "rest"

u, t = load(sys.argv[1]), load(sys.argv[2])
added = collections.Counter()
for k in set(u) | set(t):
    added[part(*k)] += t[k] - u[k]
total_u, total_t = sum(u.values()), sum(t.values())
print("  samples: untraced %d, traced %d, added %d (%.2f times)"
      % (total_u, total_t, total_t - total_u, total_t / max(total_u, 1)))
for name, n in added.most_common():
    print("    %-48s %6d  %5.1f%%" % (name, n, 100.0 * n / max(total_t - total_u, 1)))
EOF
