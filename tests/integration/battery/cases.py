"""cases.py: the battery's table of programs. One Case per program (battery.py says what each
field means); add a program by adding a Case. The C programs are built by CMakeLists.txt into
DFTRACE_TEST_BIN; the Python ones run with /usr/bin/python3 from programs/."""
import os
import random
import re
import shutil
import signal

from battery import Case

HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("DFTRACE_TEST_BIN", "")
PROGRAMS = os.path.join(HERE, "programs")
PY = "/usr/bin/python3"
WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november "
         "oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu").split()

# git, without the user's or the system's configuration, at a fixed time, one pack thread.
GIT_ENV = {"GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
           "GIT_AUTHOR_NAME": "Battery", "GIT_AUTHOR_EMAIL": "battery@example.org",
           "GIT_COMMITTER_NAME": "Battery", "GIT_COMMITTER_EMAIL": "battery@example.org",
           "GIT_AUTHOR_DATE": "2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2020-01-01T00:00:00Z",
           "GIT_CONFIG_COUNT": "2", "GIT_CONFIG_KEY_0": "pack.threads", "GIT_CONFIG_VALUE_0": "1",
           "GIT_CONFIG_KEY_1": "gc.autoDetach", "GIT_CONFIG_VALUE_1": "false"}
MPI_ENV = {"OMPI_MCA_rmaps_base_oversubscribe": "1", "OMPI_ALLOW_RUN_AS_ROOT": "1",
           "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_btl": "self,vader",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}
# A short flush interval: a traced process creates its trace file soon (the daemon programs
# wait 700 ms for it before they tidy their descriptors).
FAST_FLUSH = {"DFTRACE_OUTPUT_FLUSH_INTERVAL": "200ms"}


def text_file(path, lines, seed):
    rnd = random.Random(seed)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        for i in range(lines):
            f.write("%s %d %s\n" % (rnd.choice(WORDS), rnd.randrange(10**9), rnd.choice(WORDS)))


def files_in(folder, count, seed=1, ext=".dat"):
    def setup(work):
        rnd = random.Random(seed)
        for i in range(count):
            text_file(os.path.join(work, folder, "f%03d%s" % (i, ext)), rnd.randrange(1, 200), seed + i)
    return setup


def both(*setups):
    def setup(work):
        for s in setups:
            s(work)
    return setup


def big_input(work):
    text_file(os.path.join(work, "in.txt"), 60000, 7)


def copy_cproject(work):
    shutil.copytree(os.path.join(HERE, "cproject"), os.path.join(work, "src"))


def git_source(work):
    files_in("repo", 30, seed=3, ext=".txt")(work)


def torch_samples(work):
    rnd = random.Random(5)
    os.makedirs(os.path.join(work, "samples"))
    for i in range(16):
        with open(os.path.join(work, "samples", "s%02d.bin" % i), "wb") as f:
            f.write(bytes(rnd.randrange(256) for _ in range(2000 + 100 * i)))


def strip_cmake_times(s):
    return re.sub(r" \(\d+(\.\d+)?s\)", "", s)


def bash_job_pids(s):
    """bash's report of a job killed by a signal names its pid, right-aligned in a field of 5
    (a 4-digit pid gets one more space)."""
    return re.sub(r"(line \d+:) +\d+ ", r"\1 PID ", s)


def dftrace_disk_full(s):
    """dftrace's one message that its trace file system is full, when writing a member or when
    creating the file with its header (the program's own output is compared without it)."""
    return re.sub(r"(?m)^dftrace: error: (writing '[^']*' failed|can not open '[^']*' for writing): "
                  r"No space left on device;.*\n", "", s)


def dftrace_out_of_memory(s):
    """dftrace's messages that it ran out of memory and dropped events (one from the writer,
    one from an application thread that could not get a buffer; the program goes on; its own
    output is compared without them)."""
    return re.sub(r"(?m)^dftrace: error: out of memory( while writing the trace)?:.*\n", "", s)


def prog(name):
    return os.path.join(BIN, name)


CASES = [
    # ---- coreutils and findutils
    # their one interposed call is the C library's flush at exit: no trace (expect_trace)
    Case("true", ["true"], expect_trace=False, defects="exit-time init crash (stdout to a file)"),
    Case("false", ["false"], expect_trace=False,
         defects="exit-time init crash; exit status 1 kept"),
    Case("env_true", ["env", "true"], expect_trace=False, defects="exit-time init crash"),
    Case("kill_0", "/bin/kill -0 $$; echo rc=$?", defects="exit-time init crash"),
    Case("sort", ["sort", "-o", "sorted.txt", "in.txt"], setup=big_input,
         io_bytes=[("read", "in.txt", 1), ("write", "sorted.txt", 1)],
         defects="stdio (fread_unlocked/fwrite_unlocked) not traced: 0 bytes"),
    Case("sha256sum", "sha256sum in/* > sums.txt; sha256sum sums.txt", setup=files_in("in", 200),
         io_bytes=[("read", "in/*", 1)],
         defects="stdio (fread_unlocked) not traced: 0 bytes read"),
    Case("cat_tee", "cat in/* | tee all.txt | wc -c", setup=files_in("in", 50),
         io_bytes=[("read", "in/*", 1), ("write", "all.txt", 1)],
         defects="stdio: tee writes with fwrite_unlocked (cat's reads are the control)"),
    Case("find_exec_cp", "mkdir dst && find in -name '*.dat' -exec cp {} dst/ \\; && ls dst | wc -l",
         setup=files_in("in", 100), defects="fork-heavy (hwloc per process); descriptor"),
    Case("coreutils_mix",
         "head -c 1000 in.txt > h.txt; cut -d' ' -f1 in.txt | sort | uniq -c > words.txt; "
         "tr a-z A-Z < h.txt | wc -l; grep -c alpha in.txt; sed -n '1,5p' in.txt; "
         "awk '{n+=$2} END {print n}' in.txt; md5sum h.txt words.txt; chmod 600 words.txt; "
         "ln -s words.txt link.txt; mv h.txt head.txt; stat -c '%n %s %a' head.txt words.txt",
         setup=big_input, defects="stdio (fputs/fprintf/getline) not traced"),
    # ---- bash pipelines and loops
    Case("ls_lR_wc", "ls -lR in | wc -l; ls -R in | sort | sha256sum", setup=files_in("in", 60),
         defects="trace descriptor reused by bash (pipelines read nothing)"),
    # bash execs a `$(...)` subshell's one command and the last command of its -c string in the
    # process itself: each of those processes' trace must end before the exec.
    Case("basename_loop",
         "for i in $(seq 200); do b=$(basename /x/y/file$i.txt .txt); echo $b >> names.txt; done; "
         "wc -l < names.txt; tail -1 names.txt",
         timeout=150,
         defects="trace descriptor reused by bash (hang, files missing); exec without the end"),
    Case("timeout_dd", "timeout 1 dd if=/dev/zero of=/dev/null bs=64k status=none; echo rc=$?",
         timeout=20, defects="trace descriptor reused by bash (gzip members on stdout)"),
    Case("timeout_sleep", "timeout 1 sleep 10; echo rc=$?", timeout=20,
         defects="SIGTERM before the trace file exists, on a thread with no event yet: hang"),
    Case("while_read", "seq 2000 | while read x; do echo $((x * 3)); done | tail -3; "
         "(echo sub; cat in.txt | wc -l) > sub.txt; cat sub.txt",
         setup=big_input, defects="trace descriptor; fork child's fhash"),
    Case("subshell_inherit", "exec 5>>shared.log; for i in 1 2 3; do (echo child $i >&5; "
         "printf 'x%.0s' $(seq 100) >&5); done; exec 5>&-; wc -c < shared.log",
         defects="fork child's events use an fhash defined only in the parent's file"),
    # ---- git
    Case("git",
         "git init -q -b main repo && cd repo && git add . && git commit -q -m first && "
         "echo more >> f001.txt && git commit -q -am second && git gc -q && cd .. && "
         "git clone -q repo clone && git -C clone log --format='%H %s' | head -1 && "
         "git -C repo log --oneline | head -n 5 && git -C clone status --short | wc -l",
         setup=git_source, env=GIT_ENV, timeout=120, needs=["git"],
         ignore_content={"*/.git/index": "git's index records inode numbers and times"},
         defects="stdio; descriptor; fork child's fhash"),
    # ---- tar and gzip
    Case("tar_gzip",
         "tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf a.tar in && "
         "gzip -n -k a.tar && mkdir x && tar -xzf a.tar.gz -C x && diff -r in x/in && echo same && "
         "gzip -l a.tar.gz | tail -1 | awk '{print $2}'",
         setup=files_in("in", 40), needs=["tar", "gzip"],
         io_bytes=[("write", "a.tar", 1), ("read", "a.tar", 1), ("write", "a.tar.gz", 1),
                   ("read", "in/*", 2)],
         defects="(control: read/write); stdio"),
    # ---- cmake + make -j2
    Case("cmake_make",
         "cmake -S src -B build -G 'Unix Makefiles' -DCMAKE_BUILD_TYPE=Release > cmake.log && "
         "make -C build -j2 > /dev/null && cat build/table.txt | tail -3 && ./build/app | wc -l",
         setup=copy_cproject, timeout=180, needs=["cmake", "make", "cc"], normalise=strip_cmake_times,
         ignore_content={"cmake.log": "cmake prints its configure and generate times",
                         "build/CMakeFiles/CMakeOutput.log": "try_compile's random cmTC_ names",
                         "build/CMakeFiles/*/compiler_depend.ts": "a timestamp file",
                         "build/CMakeFiles/CMakeTmp*": "try_compile scratch"},
         unordered_content={"build/CMakeFiles/Makefile2": "cmake orders a target's dependency "
                            "lines by where they lie in memory, which any preloaded library moves"},
         defects="exit-time init crash (make recipes logging to files); fork-heavy"),
    # ---- sqlite3
    Case("sqlite_wal",
         "sqlite3 db.sqlite <<'SQL'\n"
         "PRAGMA journal_mode=WAL;\n"
         "CREATE TABLE t(a INTEGER, b TEXT);\n"
         "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<5000)\n"
         "  INSERT INTO t SELECT x, printf('row %d', x) FROM c;\n"
         "SELECT count(*), sum(a) FROM t;\n"
         "PRAGMA integrity_check;\n"
         "SQL\n"
         "sqlite3 db.sqlite \"UPDATE t SET b = upper(b) WHERE a % 7 = 0;\" "
         "\"SELECT b FROM t WHERE a = 49;\" && sqlite3 db.sqlite .dump | sha256sum",
         needs=["sqlite3"], defects="stdio; library calls through aSyscall (application mode)"),
    # ---- Python
    Case("py_mp_fork", [PY, os.path.join(PROGRAMS, "py_mp.py"), "fork"],
         defects="fork child's fhash; KeyboardInterrupt/handlers"),
    Case("py_mp_spawn", [PY, os.path.join(PROGRAMS, "py_mp.py"), "spawn"], timeout=90,
         defects="descriptor; handlers"),
    Case("py_mp_forkserver", [PY, os.path.join(PROGRAMS, "py_mp.py"), "forkserver"], timeout=30,
         defects="SIGINT/SIGTERM handlers taken: forkserver workers respawn forever"),
    Case("py_inherit", [PY, os.path.join(PROGRAMS, "py_inherit.py")],
         defects="fork child's events use an fhash defined only in the parent's file"),
    Case("py_subprocess", [PY, os.path.join(PROGRAMS, "py_subprocess.py")],
         defects="exit-time init crash (run(['true']) to a log); descriptor"),
    Case("py_sigint", [PY, os.path.join(PROGRAMS, "py_sigint.py")],
         defects="SIGINT taken: no KeyboardInterrupt, getsignal None"),
    Case("py_torch_dataloader", [PY, os.path.join(PROGRAMS, "py_torch.py")], setup=torch_samples,
         timeout=150, io_bytes=[("read", "samples/*", 1)],
         defects="fork workers; handlers; descriptor"),
    # ---- C programs that tidy their descriptor table
    Case("daemon_close_range", [prog("daemon_prog"), "close_range", "out.txt"],
         traced_env=FAST_FLUSH, io_bytes=[("write", "out.txt", 1)],
         defects="trace descriptor closed by close_range: the program's file gets gzip members"),
    Case("daemon_close_loop", [prog("daemon_prog"), "loop", "out.txt"], traced_env=FAST_FLUSH,
         io_bytes=[("write", "out.txt", 1)],
         defects="trace descriptor closed by a close loop"),
    Case("double_close", [prog("daemon_prog"), "double_close", "out.txt"], traced_env=FAST_FLUSH,
         io_bytes=[("write", "out.txt", 1)],
         defects="trace descriptor: a second close closes dftrace's file"),
    Case("dup2_low", [prog("daemon_prog"), "dup2", "out.txt"], traced_env=FAST_FLUSH,
         io_bytes=[("write", "out.txt", 1)],
         defects="trace descriptor: dup2 onto the trace's number"),
    # ---- MPI
    Case("mpirun_4", ["mpirun", "-np", "4", "--allow-run-as-root", "--oversubscribe", prog("mpi_ranks")],
         env=MPI_ENV, timeout=120, needs=["mpirun"], defects="fork-heavy; descriptor"),
    # ---- signals and limits
    Case("sigterm_mid_write", [prog("writer_loop"), "out.txt"], kill=(signal.SIGTERM, 300, "started"),
         ignore_content={"out.txt": "how much is written before the signal varies"},
         defects="the trace has an end after SIGTERM; status by signal kept"),
    Case("ulimit_f", "ulimit -f 100; dd if=/dev/zero of=big.bin bs=1k count=200 status=none; echo rc=$?",
         normalise=bash_job_pids, defects="SIGXFSZ ignored in traced processes (dd gets EFBIG instead of dying)"),
    Case("ulimit_n_64", "ulimit -n 64; sort -o sorted.txt in.txt && sha256sum in.txt sorted.txt",
         setup=big_input, defects="descriptor limits"),
    Case("ulimit_n_64_tar", "ulimit -n 64; tar --sort=name -cf a.tar in && tar -tf a.tar | wc -l",
         setup=files_in("in", 80), needs=["tar"], defects="descriptor limits"),
    Case("ulimit_v_sha", "ulimit -v 60000; sha256sum in/* | sha256sum; echo rc=$?",
         setup=files_in("in", 50), timeout=20, defects="ulimit -v: bad_alloc/system_error escape: SIGABRT"),
    Case("ulimit_v_sort", "ulimit -v 75000; sort -o sorted.txt in.txt; echo rc=$?", setup=big_input, timeout=20,
         normalise=dftrace_out_of_memory,
         defects="ulimit -v: bad_alloc/system_error escape: SIGABRT"),
    # ---- a full trace file system; the program's own output goes elsewhere
    Case("full_disk", "dd if=/dev/zero of=out.bin bs=512 count=20000 status=none; echo rc=$?; "
         "sha256sum out.bin", trace_tmpfs="128k", require_end=False,
         normalise=dftrace_disk_full,
         defects="full trace disk: partly written gzip member; program unaffected"),
]
