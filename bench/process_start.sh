#!/usr/bin/env bash
# process_start.sh BUILD [ROUNDS] [OTHER_BUILD]: what tracing adds to the life of a short
# process: /usr/bin/echo, its output to a file (so that its write is traced and dftrace
# initialises in it: configuration, header with where the process runs, writer thread, gzip
# file), started ROUNDS times (default 300) in each way, the ways alternated run by run, the
# median and quartiles of the wall time from spawn to exit printed per way, and the median CPU
# time the process used (user + system, from wait4: on a loaded machine the wall time is
# mostly waiting for a CPU, the CPU time is not):
#   bare                 no dftrace
#   traced (preload)     the environment `dftrace run` gives it (LD_PRELOAD libdftrace_io,
#                        DFTRACE_ENABLE=1): the cost inside the traced process
#   traced, output null  the same, its output to /dev/null (not a traced file: dftrace
#                        initialises at the write and writes a trace with no I/O event)
#   dftrace run          through the command (one more exec: the dftrace program's own start)
# With OTHER_BUILD, its "traced (preload)" is measured in the same rounds (before/after).
set -euo pipefail
build=$(cd "$1" && pwd) rounds=${2:-300} other=${3:-}
[ -f "$build/libdftrace_io.so" ] && [ -x "$build/tools/dftrace" ] ||
  { echo "process_start: build $build first" >&2; exit 2; }
[ -z "$other" ] || other=$(cd "$other" && pwd)
dir=$(mktemp -d) && trap 'rm -rf "$dir"' EXIT
echo "process_start: $(date -u '+%Y-%m-%d %H:%M') UTC, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg), $rounds rounds"
/usr/bin/python3 - "$build" "$rounds" "$dir" "$other" <<'PY'
import os, statistics, sys, time
build, rounds, d, other = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
base = {k: v for k, v in os.environ.items()
        if not k.startswith(("DFTRACE_", "DFTRACER_")) and k != "LD_PRELOAD"}
def traced_env(b):
    return dict(base, LD_PRELOAD=b + "/libdftrace_io.so", DFTRACE_ENABLE="1",
                DFTRACE_LOG_FILE=d + "/traces/t")
echo = ["/usr/bin/echo", "hello"]
ways = [("bare", echo, base, True),
        ("traced (preload)", echo, traced_env(build), True),
        ("traced, output null", echo, traced_env(build), False),
        ("dftrace run", [build + "/tools/dftrace", "run", "--prefix", d + "/traces/t", "--"] + echo,
         base, True)]
if other:
    ways.append(("other build, traced (preload)", echo, traced_env(other), True))
os.makedirs(d + "/traces")
times = {w[0]: [] for w in ways}
cpu = {w[0]: [] for w in ways}
null = os.open("/dev/null", os.O_WRONLY)
for r in range(rounds + 5):
    for label, cmd, env, to_file in ways:
        out = os.open(d + "/out.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) if to_file else null
        t0 = time.perf_counter()
        pid = os.posix_spawn(cmd[0], cmd, env, file_actions=[(os.POSIX_SPAWN_DUP2, out, 1)])
        _, status, usage = os.wait4(pid, 0)
        t = time.perf_counter() - t0
        if to_file:
            os.close(out)
        assert status == 0, (label, status)
        if r >= 5:  # the first rounds warm the page cache
            times[label].append(t * 1e3)
            cpu[label].append((usage.ru_utime + usage.ru_stime) * 1e3)
        for f in os.listdir(d + "/traces"):
            os.unlink(os.path.join(d + "/traces", f))
bare = statistics.median(times["bare"])
bare_cpu = statistics.median(cpu["bare"])
for label, *_ in ways:
    q = statistics.quantiles(times[label], n=4)
    c = statistics.median(cpu[label])
    print("    %-30s wall median %6.2f ms (quartiles %6.2f %6.2f) %+6.2f vs bare;"
          "  CPU %5.2f ms %+5.2f" % (label, q[1], q[0], q[2], q[1] - bare, c, c - bare_cpu))
PY
