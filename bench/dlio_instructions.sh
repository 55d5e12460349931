#!/usr/bin/env bash
# dlio_instructions.sh BUILD [BASE_BUILD]: the instructions a DLIO-like PyTorch loop (a
# DataLoader whose workers numpy.load small files, as bench/io_dlio_bench.py times) spends, per
# process, untraced, with libdftrace_io preloaded but no file traced, and traced; counted by
# valgrind's callgrind (other work on the machine does not change them).
#   - Counted from where the loop starts (after the imports and the DataLoader's creation, as
#     io_dlio_bench.py's timer): the main process and each forked worker apart. Before each
#     fork the main process dumps its counts (a part file of its own), so that a worker's
#     counts are its own: the fork's child handlers, its loads, its exit (os._exit: the
#     trace's last write). The prepare handlers run after the dump and count in both.
#   - The arms set what `dftrace run` sets (DFTRACE_ENABLE=1, DFTRACE_LOG_FILE, LD_PRELOAD,
#     DFTRACE_IO_DATA_DIR): "nothing traced" names an empty directory.
#   - FILES (default 256), WORKERS (2), EPOCHS (1), BATCH (32) set the loop. WORKERS=0 loads
#     in the main process. FORKS=N (default 0) adds N bare forks (os.fork, os._exit) before
#     the loop: a child that does nothing. LOADER=mp loads through multiprocessing's Pool of
#     forked workers instead of torch's DataLoader (no torch: a fraction of the time; the
#     workers leave by os._exit, as a DataLoader's do). KEEP=DIR keeps callgrind's files,
#     a folder per arm (DIR/untraced, DIR/nothing-N, DIR/traced-N: N counts the builds).
#     ARMS="nothing traced" (the default) picks the preloaded arms.
# Printed per arm and build: the main process's instructions, each worker's, the total, and
# the difference to the untraced arm per worker and per file loaded. Under callgrind the
# interpreter starts uninstrumented (--instr-atstart=no), so that an arm takes a minute or two.
set -euo pipefail
command -v valgrind >/dev/null || { echo "dlio_instructions: valgrind is missing" >&2; exit 2; }
files=${FILES:-256} workers=${WORKERS:-2} epochs=${EPOCHS:-1} batch=${BATCH:-32} forks=${FORKS:-0}
loader=${LOADER:-torch}
py=${PYTHON:-/usr/bin/python3}
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
mkdir "$dir/data" "$dir/empty" "$dir/traces"
cat > "$dir/zero.c" <<'EOF'
#include <valgrind/callgrind.h>
void dlio_start(void) { CALLGRIND_ZERO_STATS; CALLGRIND_START_INSTRUMENTATION; }
void dlio_dump(void) { CALLGRIND_DUMP_STATS; }
EOF
gcc -shared -fPIC -O2 -o "$dir/zero.so" "$dir/zero.c"
cat > "$dir/loop.py" <<'EOF'
import ctypes, os, sys
import numpy as np

cg = ctypes.CDLL(sys.argv[1])
d, loader_kind = sys.argv[2], sys.argv[3]
epochs, workers, batch, forks = map(int, sys.argv[4:8])
paths = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".npy"))

def load(p):
    return np.load(p)

if loader_kind == "torch":
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Files(Dataset):
        def __len__(self): return len(paths)
        def __getitem__(self, i): return torch.from_numpy(load(paths[i]))

    loader = DataLoader(Files(), batch_size=batch, num_workers=workers, shuffle=False)

    def epoch():
        return sum(float(b.sum()) for b in loader)
else:  # multiprocessing's Pool of forked workers, as a DataLoader without torch
    import multiprocessing
    ctx = multiprocessing.get_context("fork")

    def epoch():
        if workers == 0:
            return sum(float(load(p).sum()) for p in paths)
        pool = ctx.Pool(workers)
        total = sum(float(a.sum()) for a in pool.imap(load, paths, chunksize=batch))
        pool.close()  # the workers leave by os._exit, as a DataLoader's do
        pool.join()
        return total

os.register_at_fork(before=cg.dlio_dump)  # the main process's counts before each fork apart
cg.dlio_start()
for _ in range(forks):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
print(sum(epoch() for _ in range(epochs)))
EOF
"$py" - "$dir/data" "$files" <<'EOF'
import os, sys, numpy as np
rng = np.random.default_rng(1)
for i in range(int(sys.argv[2])):  # 16 KiB each, as io_dlio_bench.py's
    np.save(os.path.join(sys.argv[1], "s%05d.npy" % i), rng.random((64, 64), dtype=np.float32))
EOF
# run NAME ENV...: prints "main M workers W1 W2 ... total T"
run() {
  rm -rf "$dir"/cg* "$dir"/traces/*
  mkdir "$dir/cg"
  env -u DFTRACE_ENABLE -u LD_PRELOAD "$@" valgrind --tool=callgrind --trace-children=yes \
    --instr-atstart=no --callgrind-out-file="$dir/cg/cg.%p" \
    "$py" "$dir/loop.py" "$dir/zero.so" "$dir/data" "$loader" "$epochs" "$workers" "$batch" "$forks" \
    >"$dir/out" 2>"$dir/err" || { tail -20 "$dir/err" >&2; exit 1; }
  if [ -n "${KEEP:-}" ]; then  # callgrind's files of each arm, for callgrind_annotate
    mkdir -p "$KEEP/$arm" && cp "$dir"/cg/* "$KEEP/$arm/"
  fi
  "$py" - "$dir/cg" <<'EOF'
import os, re, sys
d = sys.argv[1]
per, parts = {}, {}
for f in os.listdir(d):
    pid = int(re.match(r"cg\.(\d+)", f).group(1))
    parts[pid] = parts.get(pid, 0) + 1
    with open(os.path.join(d, f)) as fh:
        for line in fh:
            if line.startswith("summary:"):
                per[pid] = per.get(pid, 0) + int(line.split()[1])
                break
# The main process: the one with parts of its own (dumped before each fork), else the only one.
pids = sorted(per, key=lambda p: (-parts[p], p))
main, kids = per[pids[0]], [per[p] for p in sorted(pids[1:])]
print("main %d workers %s total %d" % (main, " ".join(map(str, kids)), main + sum(kids)))
EOF
}
echo "== $(date -u '+%Y-%m-%d %H:%M') UTC: $loader loader, $workers workers, $files files x $epochs epochs, batch $batch, $forks bare forks (callgrind, from the loop's start)"
report() {  # NAME LINE PLAIN_LINE
  "$py" - "$@" <<'EOF'
import sys
name, line, plain = sys.argv[1:4]
def parse(s):
    f = s.split()
    return int(f[1]), [int(x) for x in f[3:f.index("total")]], int(f[-1])
m, w, t = parse(line)
pm, pw, pt = parse(plain)
out = "%-26s main %13d  workers %s  total %13d" % (name, m, " ".join("%11d" % x for x in w), t)
if line != plain:
    loads = int(sys.argv[4])
    out += "\n%-26s   added: main %+d, per worker %+d, total %+d (%.4fx), per file %+.0f" % (
        "", m - pm, (sum(w) - sum(pw)) / max(1, len(w)), t - pt, t / pt, (t - pt) / max(1, loads))
print(out)
EOF
}
loads=$((files * epochs))
for build in "$@"; do
  build=$(cd "$build" && pwd)
  lib=$build/libdftrace_io.so
  [ -f "$lib" ] || { echo "dlio_instructions: build $build first" >&2; exit 2; }
  # (LD_LIBRARY_PATH: a copy of a build's libraries elsewhere loads its own libdftrace)
  on=(DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$dir/traces/t" LD_PRELOAD="$lib" LD_LIBRARY_PATH="$build")
  [ -n "${plain:-}" ] || { arm=untraced; plain=$(run); report "untraced" "$plain" "$plain" "$loads"; }
  n=$((${n:-0} + 1))
  echo "-- $build"
  for a in ${ARMS:-nothing traced}; do
    arm=$a-$n
    case $a in
      nothing) report "preloaded, nothing traced" \
        "$(run "${on[@]}" DFTRACE_IO_DATA_DIR="$dir/empty")" "$plain" "$loads" ;;
      traced) report "traced" "$(run "${on[@]}" DFTRACE_IO_DATA_DIR="$dir/data")" "$plain" "$loads" ;;
    esac
  done
done
