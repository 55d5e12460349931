"""py_mp.py METHOD: a multiprocessing Pool of 2 workers (METHOD: fork, spawn or forkserver)
that writes one file per item, appends to a file every worker inherited (fork), and prints the
results in order."""
import hashlib
import multiprocessing as mp
import os
import sys


def work(i):
    data = ("item %d\n" % i).encode() * (100 + i)
    with open("out_%02d.txt" % i, "wb") as f:
        f.write(data)
    return i, hashlib.sha256(data).hexdigest()[:16]


def main():
    method = sys.argv[1]
    ctx = mp.get_context(method)
    with ctx.Pool(2) as pool:
        results = pool.map(work, range(12))
    for i, h in results:
        print(i, h)
    print("done", method)


if __name__ == "__main__":
    main()
