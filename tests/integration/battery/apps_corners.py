"""apps_corners.py: everyday programs that each stress a corner of the interposition (processes
made by fork, spawn and exec; temporary files and renames; threads; pipes and FIFOs; locks;
signals sent by others; descriptors closed or exhausted; file-size limits), part of apps.py's
table (test_apps.py, ctest integration.apps). Where the bytes a program moves are known exactly
(a file it writes whole), `io_bytes` checks the trace's figures against the files' sizes."""
import os

from battery import Case
from cases import PY, bash_job_pids, text_file

CORNER_SCRIPTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")


def big_text(work):
    """60 000 lines (about 1.7 MB): several of sort's temporary files at -S 200K."""
    text_file(os.path.join(work, "in.txt"), 60000, 7)


def small_text(work):
    text_file(os.path.join(work, "in.txt"), 3000, 21)


MP_FILES = r"""
import multiprocessing as mp, pathlib, sys
method = sys.argv[1]
ctx = mp.get_context(method)
# a bound method of the standard library: picklable, so spawn's children can run it from -c
ps = [ctx.Process(target=pathlib.Path("%s_%d.txt" % (method, i)).write_bytes,
                  args=(b"%d " % i * (3000 * (i + 1)),)) for i in range(4)]
for p in ps:
    p.start()
for p in ps:
    p.join()
print(method, [p.exitcode for p in ps])
with ctx.Pool(2) as pool:
    print(pool.map(len, ["ab" * i for i in range(6)]))
"""


def c_sources(work):
    with open(os.path.join(work, "util.h"), "w") as f:
        f.write("double norm(const double *v, int n);\n")
    with open(os.path.join(work, "util.c"), "w") as f:
        f.write("#include <math.h>\n#include \"util.h\"\n"
                "double norm(const double *v, int n) {\n  double s = 0;\n"
                "  for (int i = 0; i < n; ++i) s += v[i] * v[i];\n  return sqrt(s);\n}\n")
    with open(os.path.join(work, "main.c"), "w") as f:
        f.write("#include <stdio.h>\n#include \"util.h\"\n"
                "int main(void) {\n  double v[100];\n  for (int i = 0; i < 100; ++i) v[i] = i;\n"
                "  FILE *f = fopen(\"norm.txt\", \"w\");\n  if (!f) return 2;\n"
                "  for (int i = 1; i <= 100; ++i) fprintf(f, \"%d %.6f\\n\", i, norm(v, i));\n"
                "  printf(\"%.6f\\n\", norm(v, 100));\n  return fclose(f) != 0;\n}\n")


def cmake_script(work):
    small_text(work)
    with open(os.path.join(work, "conf.txt.in"), "w") as f:
        f.write("name=@NAME@\nlines=@LINES@\n")
    with open(os.path.join(work, "script.cmake"), "w") as f:
        f.write('file(WRITE out/a.txt "first\\n")\n'
                'foreach(i RANGE 1 300)\n  file(APPEND out/a.txt "line ${i}\\n")\nendforeach()\n'
                'file(READ out/a.txt content)\nstring(LENGTH "${content}" n)\nmessage("length ${n}")\n'
                'file(STRINGS in.txt lines)\nlist(LENGTH lines LINES)\nset(NAME corner)\n'
                'configure_file(conf.txt.in out/conf.txt @ONLY)\n'
                'file(COPY out/a.txt DESTINATION copy)\nfile(SHA256 copy/a.txt h)\nmessage("sha ${h}")\n'
                'file(RENAME out/conf.txt out/conf2.txt)\n'
                'execute_process(COMMAND sort -r out/a.txt OUTPUT_FILE out/sorted.txt RESULT_VARIABLE r)\n'
                'message("sort ${r}")\nfile(GLOB_RECURSE g RELATIVE ${CMAKE_CURRENT_LIST_DIR} out/*)\n'
                'list(SORT g)\nmessage("glob ${g}")\nfile(REMOVE copy/a.txt)\n'
                'file(ARCHIVE_CREATE OUTPUT out.tar FORMAT paxr PATHS out/a.txt out/sorted.txt MTIME 0)\n'
                'file(SIZE out.tar s)\nmessage("tar ${s}")\n')


def sqlite_rows(work):
    with open(os.path.join(work, "rows.sql"), "w") as f:
        f.write("CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);\nBEGIN;\n")
        for i in range(3000):
            f.write("INSERT INTO t(b) VALUES('row %d');\n" % i)
        f.write("COMMIT;\n")


EMFILE_PY = r"""
import errno, os, sys, time
open("in.txt").read()
time.sleep(0.3)  # past the traced run's flush interval: the trace file was written first
for round in range(3):
    fds = []
    try:
        while True:
            fds.append(os.open("in.txt", os.O_RDONLY))
    except OSError as e:
        # the exact count: the trace file holds none of the program's descriptors
        print("opened", len(fds), "then", errno.errorcode[e.errno])
    time.sleep(0.15)  # the writer's passes come while the program holds every number
    for fd in fds:
        os.close(fd)
with open("after.txt", "w") as f:
    f.write("x" * 5000)
print("wrote after")
"""


CLOSED_STDOUT_PY = r"""
import errno, os, sys
os.close(1)
try:
    os.write(1, b"lost\n")
except OSError as e:
    print("write to closed stdout:", errno.errorcode[e.errno], file=sys.stderr)
fd = os.open("a.txt", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
print("new descriptor", fd, file=sys.stderr)
os.write(fd, b"y" * 4096)
os.close(fd)
"""

LOW_FDS_PY = r"""
import os
fds = [os.open(n, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644) for n in ("x.txt", "y.txt", "z.txt")]
os.write(fds[2], ("descriptors %s\n" % fds).encode())
"""


CORNERS = [
    # ---- processes: multiprocessing's fork and spawn children writing files
    Case("py_mp_fork_files", [PY, "-c", MP_FILES, "fork"], io_bytes=[("write", "fork_*.txt", 1)]),
    Case("py_mp_spawn_files", [PY, "-c", MP_FILES, "spawn"], timeout=90,
         io_bytes=[("write", "spawn_*.txt", 1)]),
    # ---- sort: temporary files (-S 200K: several, merged), two threads
    Case("sort_big_tmp", "mkdir st && sort -S 200K --parallel=2 -T st -o sorted.txt in.txt && "
         "ls st | wc -l && sort -c sorted.txt && echo sorted", setup=big_text,
         io_bytes=[("read", "in.txt", 1), ("write", "sorted.txt", 1)]),
    # ---- compressors (xz and zstd with threads): each compresses, then decompresses to a file.
    # bzip2 probes for the end of its input with fgetc, ungetc, then fread: each probed byte
    # is read twice and must count once (docs/io.md, "Pushed-back bytes").
    Case("xz_bzip2_zstd", "xz -T2 -k -6 in.txt && bzip2 -k in.txt && "
         "zstd -q -T2 -k in.txt && xz -dc in.txt.xz > d_xz.txt && "
         "bzip2 -dc in.txt.bz2 > d_bz.txt && "
         "zstd -q -dc in.txt.zst > d_zst.txt && for f in d_*.txt; do cmp in.txt $f && echo $f same; done",
         setup=big_text, needs=["xz", "bzip2", "zstd"],
         io_bytes=[("read", "in.txt", 6), ("write", "in.txt.xz", 1), ("write", "in.txt.bz2", 1),
                   ("write", "in.txt.zst", 1), ("write", "d_*.txt", 1),
                   ("read", "in.txt.xz", 1), ("read", "in.txt.bz2", 1), ("read", "in.txt.zst", 1)]),
    # ---- sqlite3's online backup, restore and VACUUM INTO
    Case("sqlite_backup", "sqlite3 db < rows.sql && sqlite3 db '.backup bk.db' && "
         "sqlite3 bk.db 'PRAGMA integrity_check;' 'SELECT count(*) FROM t;' && "
         "sqlite3 db 'DELETE FROM t;' && sqlite3 db '.restore bk.db' && "
         "sqlite3 db \"VACUUM INTO 'v.db';\" && sqlite3 v.db 'SELECT max(a), b FROM t WHERE a = 1234;'",
         setup=sqlite_rows, needs=["sqlite3"], io_bytes=[("read", "rows.sql", 1)]),
    # ---- cmake -P: appends, copies, renames, a child process, an archive
    Case("cmake_script", ["cmake", "-P", "script.cmake"], setup=cmake_script, needs=["cmake", "sort"],
         io_bytes=[("write", "out/sorted.txt", 1)]),
    # ---- gcc: the driver, cc1, as, collect2, ld: exec, temporary files, pipes (-pipe)
    Case("gcc_compile", "gcc -O2 -c util.c -o util.o && gcc -pipe -O2 -Wall main.c util.o -o prog -lm "
         "&& ./prog && gcc -save-temps=obj -c main.c -o m.o && ls", setup=c_sources, timeout=120,
         needs=["gcc"], io_bytes=[("write", "norm.txt", 1)]),
    # ---- perl, awk, sed -i (a temporary file renamed over the original)
    Case("perl_awk_sed_i", "cp in.txt s.txt && chmod 640 s.txt && sed -i 's/alpha/ALPHA/g' s.txt && "
         "perl -pi -e 's/bravo/BRAVO/g' s.txt && perl -i.bak -ne 'print unless /charlie/' s.txt && "
         "wc -l s.txt s.txt.bak && awk '{print > (\"by_\" $1 \".txt\")}' in.txt && ls by_* | wc -l && "
         "perl -e 'open(my $f, \">\", \"p.txt\") or die; print $f \"z\" x 100000; close $f; "
         "print -s \"p.txt\", \"\\n\"'",
         setup=small_text, needs=["perl", "awk", "sed"],
         io_bytes=[("write", "by_*.txt", 1), ("write", "p.txt", 1)]),
    # ---- tee to several files, appending too
    Case("tee_several", "seq 200000 | tee t1.txt t2.txt t3.txt | wc -c && seq 1000 | tee -a t3.txt > /dev/null",
         io_bytes=[("write", "t*.txt", 1)]),
    # ---- split into parts, cat them back; split --filter through a shell and gzip
    Case("split_cat", "split -b 100k -d in.txt part_ && cat part_* > joined.txt && cmp in.txt joined.txt && "
         "ls part_* | wc -l && split -l 20000 --filter='gzip -n > $FILE.gz' in.txt gz_ && ls gz_*",
         setup=big_text, needs=["gzip"],
         io_bytes=[("write", "part_*", 1), ("read", "part_*", 1), ("write", "joined.txt", 1),
                   ("read", "in.txt", 3), ("read", "joined.txt", 1)]),
    # ---- symbolic and hard links
    Case("ln_readlink", "echo data > target.txt && ln -s target.txt l1 && ln -s l1 l2 && ln -s nowhere dangling && "
         "readlink l2 && readlink -f l2 | sed \"s|$PWD|.|\" && cat l2 && echo more >> l2 && cat target.txt && "
         "ln -sf target.txt l1 && ln target.txt hard.txt && stat -c '%h %s' target.txt && "
         "{ test -e dangling || echo dangling; } && cat dangling; echo rc=$?"),
    # ---- a FIFO: a writer in the background, a reader; one opened read-write by bash
    Case("mkfifo_pipe", "mkfifo p && { seq 100000 > p & } && cat p > out.txt && wait && wc -l < out.txt && "
         "mkfifo q && exec 3<>q && echo through >&3 && read l <&3 && echo $l && exec 3>&-",
         io_bytes=[("write", "out.txt", 1)], timeout=30),
    # ---- flock: a holder, a refused -n, a waiter that gets it (the holder lets go once the -n
    # was refused, not after a time: on a loaded machine the -n may come late)
    Case("flock", "flock lk -c 'touch held; while [ ! -e probed ]; do sleep 0.01; done; echo holder done' & "
         "while [ ! -e held ]; do sleep 0.01; done; flock -n lk true; echo rc=$?; touch probed; "
         "flock -w 20 lk -c 'echo waiter got it >> log.txt'; wait; cat log.txt",
         timeout=40, needs=["flock"]),
    # ---- timeout: SIGTERM (124), --preserve-status (143), SIGKILL (137), -k after an ignored TERM
    Case("timeout_statuses", "timeout 1 sleep 5; echo rc=$?; timeout --preserve-status 1 sleep 5; echo rc=$?; "
         "timeout -s KILL 1 sleep 5; echo rc=$?; timeout -k 1 1 bash -c 'trap \"\" TERM; sleep 5'; echo rc=$?; "
         "timeout 5 true; echo rc=$?", timeout=40, normalise=bash_job_pids, needs=["timeout"]),
    # ---- nohup: SIGHUP ignored through exec (a program's own kill -HUP must not end it)
    Case("nohup_sighup", "nohup bash -c 'kill -HUP $$; echo survived' > o.txt 2> e.txt; echo rc=$?; "
         "cat o.txt e.txt; bash -c 'kill -HUP $$; echo not reached'; echo rc=$?",
         normalise=bash_job_pids, needs=["nohup"]),
    # ---- a closed stdout: EBADF stays the program's, the next descriptor is 1
    Case("closed_stdout", [PY, "-c", CLOSED_STDOUT_PY], io_bytes=[("write", "a.txt", 1)]),
    Case("closed_std_fds", "exec 0<&- 1>&- 2>&-; %s -c '%s'; exec 2> err.txt; echo hi; echo rc=$? >&2"
         % (PY, LOW_FDS_PY.replace("'", "\"")), io_bytes=[("write", "z.txt", 1)]),
    # ---- ulimit -n 20: EMFILE is the program's, at the same count; sort adapts its merges
    Case("ulimit_n_20_emfile", "ulimit -n 20; %s -c '%s'" % (PY, EMFILE_PY.replace("'", "\"")),
         setup=small_text, io_bytes=[("write", "after.txt", 1)],
         traced_env={"DFTRACE_OUTPUT_FLUSH_INTERVAL": "100ms"}),
    Case("ulimit_n_20_sort", "ulimit -n 20; mkdir st && sort -S 100K -T st -o sorted.txt in.txt && "
         "sha256sum sorted.txt", setup=big_text,
         io_bytes=[("read", "in.txt", 1), ("write", "sorted.txt", 1)]),
    # ---- ulimit -f: head dies of SIGXFSZ; Python (which ignores it) gets EFBIG
    Case("ulimit_f_small", "ulimit -f 10; head -c 20000 /dev/zero > big.bin; echo rc=$?; "
         "%s -c 'open(\"p.bin\", \"wb\").write(b\"x\" * 20000)' 2>&1 | tail -1; "
         "ls -l big.bin p.bin | awk '{print $5, $9}'" % PY, normalise=bash_job_pids),
]
