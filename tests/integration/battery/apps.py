"""apps.py: the compact table of everyday programs (test_apps.py, ctest integration.apps): each
runs untraced and under `dftrace run` (or initialising dftrace itself), compared by battery.py.
Small inputs, so that the whole table stays within a few minutes."""
import os
import re
import signal

from apps_corners import CORNERS
from battery import Case
from cases import FAST_FLUSH, GIT_ENV, PROGRAMS, PY, files_in, text_file

PYTHONPATH = os.environ.get("DFTRACE_TEST_PYTHONPATH", "")


def sql_inserts(work):
    """10 000 INSERTs in one transaction, an index, a query, the integrity check."""
    with open(os.path.join(work, "ins.sql"), "w") as f:
        f.write("PRAGMA synchronous=FULL;\nCREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c REAL);\n")
        f.write("BEGIN;\n")
        for i in range(10000):
            f.write("INSERT INTO t(b, c) VALUES('row %d', %d.5);\n" % (i, i))
        f.write("COMMIT;\nSELECT count(*), sum(a), sum(c) FROM t;\nCREATE INDEX tb ON t(b);\n"
                "SELECT a FROM t WHERE b = 'row 4242';\nPRAGMA integrity_check;\n")


def small_tree(work):
    files_in("tree/a/b", 20, seed=11)(work)
    text_file(os.path.join(work, "tree", "nums.txt"), 3000, 12)


def makefile(work):
    small_tree(work)
    with open(os.path.join(work, "Makefile"), "w") as f:
        f.write("all: count.txt\nsorted.txt: tree/nums.txt\n\tsort -k2 -n $< > $@\n"
                "count.txt: sorted.txt\n\twc -l $< > $@\n\t@echo built $@\n")


SELF_SIGNAL = """import os, signal
for i in range(20):
    with open("f%%d.txt" %% i, "w") as f:
        f.write("line %%d\\n" %% i)
print("sending", flush=True)
%s
print("not reached")
"""


def no_carets(s):
    """Python's traceback marks the call the interrupt landed in (pwrite, pread, sleep: the moment
    of the signal decides, untraced as traced); the frame's line itself is compared."""
    return re.sub(r"(?m)^ +[~^]+ *\n", "", s)


APPS = [
    # ---- sqlite3: a rollback journal and WAL with mmap, fcntl locks, pread/pwrite, fsync
    Case("sqlite_journal_10k", "sqlite3 db < ins.sql && sqlite3 db 'DELETE FROM t WHERE a % 3 = 0;' "
         "VACUUM 'SELECT count(*) FROM t;' && sqlite3 db .dump | sha256sum",
         setup=sql_inserts, needs=["sqlite3"], io_bytes=[("read", "ins.sql", 1)]),
    Case("sqlite_wal_mmap_10k",
         "(echo 'PRAGMA journal_mode=WAL; PRAGMA mmap_size=268435456;'; cat ins.sql; "
         "echo 'PRAGMA wal_checkpoint(TRUNCATE);') | sqlite3 db && "
         "sqlite3 db 'PRAGMA mmap_size=268435456;' 'SELECT sum(length(b)) FROM t;' && "
         "sqlite3 db .dump | sha256sum", setup=sql_inserts, needs=["sqlite3"]),
    Case("py_sqlite3", [PY, os.path.join(PROGRAMS, "py_sqlite.py")]),
    # ---- Ctrl-C: Python's KeyboardInterrupt traceback, its exit status, a trace with its end
    Case("py_sigint_run", [PY, os.path.join(PROGRAMS, "py_sigloop.py")],
         kill=(signal.SIGINT, 300, "started"), normalise=no_carets, traced_env=FAST_FLUSH),
    Case("py_sigint_import", [PY, os.path.join(PROGRAMS, "py_sigloop.py"), "--import"],
         env={"PYTHONPATH": PYTHONPATH}, traced_by="import",
         kill=(signal.SIGINT, 300, "started"), normalise=no_carets),
    Case("py_sigint_timeout",
         "timeout -s INT 2 %s %s; echo rc=$?; timeout --preserve-status -s INT 2 %s %s; echo rc=$?"
         % ((PY, os.path.join(PROGRAMS, "py_sigloop.py")) * 2), normalise=no_carets, traced_env=FAST_FLUSH,
         timeout=30, needs=["timeout"]),
    # a process that kills itself with a signal whose default action ends it: the status by the
    # signal, and a trace whose end names the signal
    Case("py_kill_self", [PY, "-c", SELF_SIGNAL % "os.kill(os.getpid(), signal.SIGUSR1)"],
         end_signal="SIGUSR1"),
    Case("py_raise_signal", [PY, "-c", SELF_SIGNAL % "signal.raise_signal(signal.SIGUSR1)"],
         end_signal="SIGUSR1"),
    # ---- archives, copies, builds, shells
    Case("tar_czf_xzf", "tar czf t.tgz tree && mkdir x && tar xzf t.tgz -C x && diff -r tree x/tree "
         "&& echo same", setup=small_tree, needs=["tar", "gzip"]),
    Case("gzip_9", "cp tree/nums.txt n.txt && gzip -9 -n n.txt && gzip -l n.txt.gz | tail -1",
         setup=small_tree, needs=["gzip"], io_bytes=[("write", "n.txt.gz", 1)]),
    # cp's in-kernel copies (copy_file_range): read from the sources, written to the copies
    Case("cp_r", "cp -r tree copy && cp -rp tree copy_p && ls -lR copy_p | sha256sum",
         setup=small_tree,
         io_bytes=[("read", "tree/*", 2), ("write", "copy/*", 1), ("write", "copy_p/*", 1)]),
    Case("git_commit", "git init -q -b main repo && cp -r tree/. repo/ && cd repo && git add . && "
         "git commit -q -m first && git log --format='%H %s' && git ls-files | wc -l",
         setup=small_tree, env=GIT_ENV, needs=["git"],
         ignore_content={"*/.git/index": "git's index records inode numbers and times"}),
    Case("make_tiny", ["make"], setup=makefile, needs=["make"]),
    Case("bash_redirections",
         "exec 4> fd4.txt; cat <<EOF > h.txt\nline one $HOME\nline two\nEOF\n"
         "cat <<-'X' >> h.txt 2>&1\n\ttabbed $x\n\tX\n"
         "echo to4 >&4; { echo a; echo b >&2; } > both.txt 2>&1; cat < h.txt >> fd4.txt; "
         "exec 4>&-; wc -l < fd4.txt; echo err >&2"),
    Case("pipeline_uniq", "cat tree/a/b/* | cut -d' ' -f1 | sort | uniq -c | sort -rn | head -5",
         setup=small_tree),
    Case("dd_bs_count", "dd if=tree/nums.txt of=d.bin bs=512 count=7 status=none; "
         "dd if=/dev/zero of=z.bin bs=4k count=100 2>&1 | head -2; "
         "dd if=d.bin bs=100 skip=2 count=3 status=none | wc -c", setup=small_tree,
         io_bytes=[("write", "d.bin", 1), ("write", "z.bin", 1)]),
    Case("find", "find tree -type f -name 'f01*' | sort; find tree -newer tree/nums.txt | wc -l; "
         "find . -type f -size +1k -exec wc -c {} + | sort", setup=small_tree),
    Case("rsync", "rsync -a tree/ copy/ && echo x >> tree/nums.txt && "
         "rsync -a --delete --stats tree/ copy/ | grep -E '^Number of (files|regular files transferred)'"
         " && diff -r tree copy && echo same", setup=small_tree, needs=["rsync"]),
    # ---- descriptor tidying: closing everything above 2, dup2 over the trace's descriptor
    Case("bash_close_fds", "for i in $(seq 3 40); do eval \"exec $i>&-\"; done; echo hi > after.txt; "
         "seq 100 | sort -r > s.txt; wc -l < s.txt", traced_env=FAST_FLUSH),
    Case("py_closerange", [PY, os.path.join(PROGRAMS, "py_fds.py"), "closerange"],
         traced_env=FAST_FLUSH, io_bytes=[("write", "other.txt", 1)]),
    Case("py_dup2_trace_fd", [PY, os.path.join(PROGRAMS, "py_fds.py"), "dup2"],
         traced_env=FAST_FLUSH, io_bytes=[("write", "other.txt", 1)]),
] + CORNERS
