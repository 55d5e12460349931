#!/usr/bin/env python3
"""check_install.py: installs the Fortran module (component fortran) and builds a program against it with pkg-config.

Usage: check_install.py <build dir> <Fortran compiler> <work dir> [compiler flags...]
(flags: e.g. -fsanitize=address in a sanitizer build, whose libraries need it)

The core's own files (libdftrace, dftrace.pc) are copied from the build tree, as the core's
install rules would put them; the Fortran component is installed as `cmake --install` does
(tests/cmake/install_tree.cmake: the build tree's install manifests are left alone).
The program is compiled with `$(pkg-config --cflags --libs dftrace-fortran)` only, run, and
its trace read with gzip + json.
"""
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys

from fortran_check import program_env, report


def manifest_state(build):
    """Name, size and time of the build tree's install manifests."""
    out = []
    for m in sorted(glob.glob(os.path.join(build, "install_manifest*.txt"))):
        st = os.stat(m)
        out.append((m, st.st_size, st.st_mtime_ns))
    return out


def main():
    build, fc, work, flags = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.rmtree(work, ignore_errors=True)
    prefix = os.path.join(work, "prefix")
    manifests = manifest_state(build)
    # As `cmake --install --component fortran`, without touching the build tree's manifests.
    subprocess.run(["cmake", f"-DBUILD_DIR={build}", f"-DPREFIX={prefix}",
                    f"-DWORK={os.path.join(work, 'install')}", "-DCOMPONENT=fortran", "-P",
                    os.path.join(here, "..", "..", "cmake", "install_tree.cmake")],
                   check=True, capture_output=True, text=True)
    if manifest_state(build) != manifests:
        return ["the build tree's install_manifest*.txt changed"]
    libdir = os.path.dirname(glob.glob(os.path.join(prefix, "*", "libdftrace_fortran.so"))[0])
    mods = glob.glob(os.path.join(prefix, "include", "dftrace", "fortran", "dftrace.mod"))
    if len(mods) != 1:
        return [f"dftrace.mod not installed under {prefix}/include/dftrace/fortran"]
    pcdir = os.path.join(libdir, "pkgconfig")
    if not os.path.exists(os.path.join(pcdir, "dftrace-fortran.pc")):
        return ["dftrace-fortran.pc not installed"]
    for lib in glob.glob(os.path.join(build, "libdftrace.so*")):
        shutil.copy(lib, libdir, follow_symlinks=False)
    shutil.copy(os.path.join(build, "dftrace.pc"), pcdir)

    env = dict(os.environ, PKG_CONFIG_PATH=pcdir)
    # The .pc files carry the configured prefix; point them at this one.
    pc = subprocess.run(["pkg-config", f"--define-variable=prefix={prefix}", "--cflags", "--libs",
                         "dftrace-fortran"], env=env, capture_output=True, text=True, check=True)
    exe = os.path.join(work, "consumer")
    cmd = [fc, *flags, os.path.join(here, "consumer.f90"), *pc.stdout.split(), f"-Wl,-rpath,{libdir}",
           "-o", exe]
    p = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
    if p.returncode != 0:
        return [f"compile failed: {' '.join(cmd)}\n{p.stderr}"]
    trace = os.path.join(work, "consumer.pfw.gz")
    env = program_env()
    p = subprocess.run([exe, trace], capture_output=True, text=True, env=env, timeout=60)
    if p.returncode != 0 or p.stderr.strip():
        return [f"consumer: exit {p.returncode}, stderr {p.stderr!r}"]
    with gzip.open(trace, "rt", encoding="utf-8") as f:
        objs = [json.loads(l) for l in f.read().splitlines()[1:-1]]
    fwd = [o for o in objs if o.get("ph") == "X" and o["name"] == "forward"]
    res = [o for o in objs if o.get("ph") == "C" and o["name"] == "compute"]
    fails = []
    if [(o["cat"], o["args"].get("step"), o["args"].get("layer")) for o in fwd] != \
            [("compute", 1, 3), ("compute", 2, 3), ("compute", 3, 3)]:
        fails.append(f"forward events {fwd}")
    if [o["args"].get("residual") for o in res] != [1.0e-3, 1.0e-3 / 2, 1.0e-3 / 3]:
        fails.append(f"residual counters {res}")
    return fails


if __name__ == "__main__":
    report(main, "fortran install")
