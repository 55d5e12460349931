#!/usr/bin/env bash
# fork_child.sh BUILD [ROUNDS] [OTHER_BUILD]: what tracing adds to a forked child that does a
# little I/O and leaves, as a DataLoader worker or a multiprocessing Pool worker does. A Python
# process forks 40 children one after the other; each reads a file in the traced directory
# and leaves with os._exit. Each way is run ROUNDS times (default 10), the ways alternated
# round by round; printed per way: the median CPU time of the whole run (the parent and its
# reaped children, user + system, from wait4: a loaded machine inflates the wall time, not
# this) and of the wall time, and the CPU time per child beyond the untraced run's.
#   untraced             no dftrace
#   traced (preload)     LD_PRELOAD libdftrace_io, DFTRACE_ENABLE=1, the children's reads traced
#   nothing traced       the same with the data directory elsewhere: no event (each process
#                        still writes its trace: the header and the end line)
# With OTHER_BUILD, its two preloaded ways are measured in the same rounds (before/after).
set -euo pipefail
build=$(cd "$1" && pwd) rounds=${2:-10} other=${3:-}
[ -f "$build/libdftrace_io.so" ] || { echo "fork_child: build $build first" >&2; exit 2; }
[ -z "$other" ] || other=$(cd "$other" && pwd)
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
echo "fork_child: $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg), $rounds rounds"
/usr/bin/python3 - "$build" "$rounds" "$dir" "$other" <<'PY'
import os, statistics, sys, time
build, rounds, d, other = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
CHILDREN = 40
os.makedirs(d + "/data")
os.makedirs(d + "/traces")
with open(d + "/data/sample", "wb") as f:
    f.write(os.urandom(16384))
prog = d + "/forks.py"
with open(prog, "w") as f:
    f.write("import os, sys\n"
            "for _ in range(%d):\n"
            "    pid = os.fork()\n"
            "    if pid == 0:\n"
            "        with open(sys.argv[1], 'rb') as g:\n"
            "            g.read()\n"
            "        os._exit(0)\n"
            "    os.waitpid(pid, 0)\n" % CHILDREN)
base = {k: v for k, v in os.environ.items()
        if not k.startswith(("DFTRACE_", "DFTRACER_")) and k != "LD_PRELOAD"}
def traced_env(b, data=d + "/data"):
    # (LD_LIBRARY_PATH: a copy of a build's libraries elsewhere loads its own libdftrace)
    return dict(base, LD_PRELOAD=b + "/libdftrace_io.so", LD_LIBRARY_PATH=b, DFTRACE_ENABLE="1",
                DFTRACE_LOG_FILE=d + "/traces/t", DFTRACE_IO_DATA_DIR=data)
os.makedirs(d + "/none")
ways = [("untraced", base), ("traced (preload)", traced_env(build)),
        ("nothing traced (preload)", traced_env(build, d + "/none"))]
if other:
    ways.append(("other build, traced (preload)", traced_env(other)))
    ways.append(("other build, nothing traced", traced_env(other, d + "/none")))
cpu = {w: [] for w, _ in ways}
wall = {w: [] for w, _ in ways}
for _ in range(rounds):
    for name, env in ways:
        t0 = time.perf_counter()
        pid = os.spawnve(os.P_NOWAIT, "/usr/bin/python3", ["python3", prog, d + "/data/sample"], env)
        _, status, ru = os.wait4(pid, 0)
        wall[name].append(time.perf_counter() - t0)
        assert status == 0, (name, status)
        cpu[name].append(ru.ru_utime + ru.ru_stime)
        for f in os.listdir(d + "/traces"):
            os.unlink(os.path.join(d + "/traces", f))
plain = statistics.median(cpu["untraced"])
plain_wall = statistics.median(wall["untraced"])
for name, _ in ways:
    c = statistics.median(cpu[name])
    extra = "" if name == "untraced" else ", +%.2f ms CPU, +%.2f ms wall per child" % (
        (c - plain) * 1e3 / CHILDREN, (statistics.median(wall[name]) - plain_wall) * 1e3 / CHILDREN)
    print("%-30s CPU median %.3f s (%.3f to %.3f), wall median %.3f s%s"
          % (name, c, min(cpu[name]), max(cpu[name]), statistics.median(wall[name]), extra))
PY
