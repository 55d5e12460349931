"""io_dlio_bench.py: a DLIO-like loop (PyTorch DataLoader, 2 workers, numpy.load of many small
files) untraced and under `dftrace run` (libdftrace_io preloaded: every POSIX and STDIO call on
the dataset traced), side by side, alternated round by round. Prints each round's seconds and
the median ratio traced/untraced.

    /usr/bin/python3 bench/io_dlio_bench.py BUILD [--files 4000] [--rounds 7] [--epochs 2]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

CHILD = r'''
import sys, time, numpy as np, torch
from torch.utils.data import DataLoader, Dataset

class Files(Dataset):
    def __init__(self, paths): self.paths = paths
    def __len__(self): return len(self.paths)
    def __getitem__(self, i): return torch.from_numpy(np.load(self.paths[i]))

def main():
    d, epochs = sys.argv[1], int(sys.argv[2])
    import os
    paths = sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".npy"))
    loader = DataLoader(Files(paths), batch_size=32, num_workers=2, shuffle=True)
    t0 = time.perf_counter()
    total = 0.0
    for _ in range(epochs):
        for batch in loader:
            total += float(batch.sum())
    print("%.6f" % (time.perf_counter() - t0))

if __name__ == "__main__":
    main()
'''


def main():
    p = argparse.ArgumentParser()
    p.add_argument("build")
    p.add_argument("--files", type=int, default=4000)
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--epochs", type=int, default=2)
    a = p.parse_args()
    cli = os.path.join(os.path.abspath(a.build), "tools", "dftrace")
    tmp = tempfile.mkdtemp(prefix="dlio-bench-")
    try:
        import numpy as np
        data = os.path.join(tmp, "data")
        os.mkdir(data)
        rng = np.random.default_rng(1)
        for i in range(a.files):  # 16 KiB each, as DLIO's small-sample workloads
            np.save(os.path.join(data, "s%05d.npy" % i), rng.random((64, 64), dtype=np.float32))
        child = os.path.join(tmp, "child.py")
        with open(child, "w") as f:
            f.write(CHILD)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
        env.pop("LD_PRELOAD", None)
        py = "/usr/bin/python3"
        plain_cmd = [py, child, data, str(a.epochs)]
        traced_cmd = [cli, "run", "--prefix", os.path.join(tmp, "traces", "t"), "--", *plain_cmd]
        os.mkdir(os.path.join(tmp, "traces"))
        subprocess.run(plain_cmd, env=env, check=True, capture_output=True)  # warm the cache
        plain, traced = [], []
        for r in range(a.rounds):
            for name, cmd, out in (("untraced", plain_cmd, plain), ("traced", traced_cmd, traced)):
                shutil.rmtree(os.path.join(tmp, "traces"))
                os.mkdir(os.path.join(tmp, "traces"))
                res = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True)
                out.append(float(res.stdout.strip().splitlines()[-1]))
            with open("/proc/loadavg") as f:
                load = f.read().split()[0]
            print("round %d: untraced %.3f s, traced %.3f s, ratio %.3f (load %s)"
                  % (r + 1, plain[-1], traced[-1], traced[-1] / plain[-1], load), flush=True)
        events = subprocess.run([cli, "stat", "--json", *sorted(
            os.path.join(tmp, "traces", f) for f in os.listdir(os.path.join(tmp, "traces")))],
            capture_output=True, text=True).stdout
        import json
        st = json.loads(events)
        io = sum(r["count"] for r in st["by_name"] if r["cat"] in ("POSIX", "STDIO"))
        ratios = sorted(t / u for t, u in zip(traced, plain))
        print("files %d x %d epochs; I/O events in the last traced run: %d" % (a.files, a.epochs, io))
        print("median untraced %.3f s, traced %.3f s; median ratio %.3f (min %.3f, max %.3f)"
              % (statistics.median(plain), statistics.median(traced), statistics.median(ratios),
                 ratios[0], ratios[-1]))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
