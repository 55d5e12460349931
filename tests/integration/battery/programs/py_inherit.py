"""py_inherit.py: forked children (os.fork and a fork Pool) write to a file their parent
opened, each through the descriptor it inherited, each into its own 16-byte slot."""
import multiprocessing as mp
import os


def put(slot, text):
    os.pwrite(SHARED, ("%-15s\n" % text).encode(), 16 * slot)


def child_write(i):
    put(4 + i, "pool child %d" % i)
    return i


SHARED = os.open("shared.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)


def main():
    put(0, "parent")
    for i in range(3):
        pid = os.fork()
        if pid == 0:
            put(1 + i, "fork child %d" % i)
            os._exit(0)
        os.waitpid(pid, 0)
    with mp.get_context("fork").Pool(2) as pool:
        print(sorted(pool.map(child_write, range(4))))
    os.close(SHARED)
    print(open("shared.log").read(), end="")


if __name__ == "__main__":
    main()
