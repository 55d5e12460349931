"""py_fds.py dup2|closerange: waits until a traced process has written its trace file (in
DFTRACE_LOG_FILE's directory; the file is open only while a write is under way), then either
dup2s a file of its own over every descriptor from 3 to 9 and over the trace's when it is open
(traced), or closes every descriptor above 2 (os.closerange), and keeps writing its own files."""
import glob
import os
import sys
import time


def trace_fds():
    out = []
    for n in os.listdir("/proc/self/fd"):
        try:
            if ".pfw" in os.readlink("/proc/self/fd/" + n):
                out.append(int(n))
        except OSError:
            pass
    return out


def trace_written():
    log = os.environ.get("DFTRACE_LOG_FILE", "")
    return bool(log) and bool(glob.glob(os.path.join(os.path.dirname(log), "*.pfw*")))


traced = "LD_PRELOAD" in os.environ
deadline = time.monotonic() + 20
with open("wait.txt", "w") as f:
    f.write("waiting\n")
while traced and not trace_written() and time.monotonic() < deadline:
    with open("wait.txt", "w") as f:
        f.write("waiting\n")
    time.sleep(0.02)
if traced and not trace_written():
    sys.exit("py_fds: the trace file was never written")
mine = os.open("mine.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
if sys.argv[1] == "dup2":
    targets = trace_fds() + [t for t in range(3, 10) if t != mine]
    for t in targets:
        os.dup2(mine, t)
    for i in range(300):
        os.write(targets[0], b"via dup2 %d\n" % i)
        with open("other.txt", "a") as f:
            f.write("line %d\n" % i)
else:
    os.closerange(3, 65536)
    for i in range(300):
        with open("other.txt", "a") as f:
            f.write("line %d\n" % i)
    mine = os.open("mine.txt", os.O_WRONLY | os.O_APPEND)
    os.write(mine, b"after closerange\n")
print(sum(1 for _ in open("other.txt")), os.path.getsize("mine.txt"))
