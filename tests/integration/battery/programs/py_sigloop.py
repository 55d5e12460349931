"""py_sigloop.py: a loop of pwrite, pread and a short sleep on one line, stopped by SIGINT (Ctrl-C): Python's
own KeyboardInterrupt traceback and exit status. With --import the program initialises dftrace
itself (`import dftrace`, no preloading)."""
import os
import sys
import time

if "--import" in sys.argv:
    import dftrace
    dftrace.initialize()
fd = os.open("progress.bin", os.O_RDWR | os.O_CREAT, 0o644)
with open("starting", "w") as f:
    f.write("loop\n")
n, marked = 0, False
# `started` (renamed from `starting`) appears in the loop's line itself: the SIGINT sent after it
# lands in that line however late the process reaches it (untraced as traced, a loaded machine)
while True: n = os.pwrite(fd, b"step", 0) + len(os.pread(fd, 4, 0)); marked = marked or os.rename("starting", "started") is None; time.sleep(0.001)  # noqa: E501,E701,E702
