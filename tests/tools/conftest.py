# conftest.py: shared helpers for the dftrace command's tests: running the real command and
# reading traces back by an independent route (Python's gzip, zlib and json modules).
import gzip
import json
import os
import subprocess
import zlib

import pytest

CLI = os.environ.get("DFTRACE_CLI", "")
GEN = os.environ.get("DFTRACE_GEN_TRACE", "")
TRAIN_LOOP = os.environ.get("DFTRACE_TRAIN_LOOP", "")
# Traces written by DFTracer itself, kept in the repository (tests/data/dftracer/README.md).
REF = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data",
                                   "dftracer"))


def pytest_configure(config):
    if not CLI or not os.path.exists(CLI):
        raise pytest.UsageError("DFTRACE_CLI must name the built dftrace command (run through ctest)")


def run(*args, check=True, env=None, stdin=None):
    """Runs the dftrace command; returns the CompletedProcess (text mode)."""
    e = dict(os.environ)
    e.setdefault("DFTRACE_NO_PROGRESS", "1")
    if env:
        e.update(env)
    p = subprocess.run([CLI, *map(str, args)], capture_output=True, text=True, env=e,
                       stdin=stdin, timeout=600)
    if check and p.returncode != 0:
        raise AssertionError(f"dftrace {' '.join(map(str, args))} exited {p.returncode}:\n"
                             f"{p.stdout[-3000:]}\n{p.stderr[-3000:]}")
    return p


def need(*modules):
    """Imports each module, or skips the calling test (or module) saying which Debian package
    scripts/setup-debian.sh installs for it; returns the first module."""
    got = [pytest.importorskip(m, reason="Debian's python3-%s is not installed "
                                         "(scripts/setup-debian.sh test installs it)" % m)
           for m in modules]
    return got[0]


def gen(path, events, **opts):
    """Writes a synthetic trace with the test generator (tests/tools/gen_trace.cpp)."""
    cmd = [GEN, str(path), "--events", str(events)]
    for k, v in opts.items():
        flag = "--" + k.replace("_", "-")
        if v is True:
            cmd.append(flag)
        elif v is not False and v is not None:
            cmd += [flag, str(v)]
    subprocess.run(cmd, check=True, timeout=600)
    return path


def raw_text(path):
    """The decompressed text of a trace; a damaged gzip tail is dropped (what zlib salvages)."""
    data = open(path, "rb").read()
    if data[:2] != b"\x1f\x8b":
        return data.decode("utf-8")
    out = []
    while data:
        d = zlib.decompressobj(31)
        try:
            out.append(d.decompress(data))
        except zlib.error:
            break
        if not d.eof:
            break
        data = d.unused_data
        if data[:2] != b"\x1f\x8b":
            break
    return b"".join(out).decode("utf-8", errors="replace")


def lines(path):
    """All lines of a trace (decompressed), as str, without the newline."""
    t = raw_text(path)
    ls = t.split("\n")
    if ls and ls[-1] == "":
        ls.pop()
    return ls


def events(path):
    """The JSON objects of a trace, parsed with Python's json module."""
    out = []
    for l in lines(path):
        s = l.strip()
        if not s or s in ("[", "]"):
            continue
        out.append(json.loads(s))
    return out


def gzip_members(path):
    """(offset, header flags, extra field bytes, compressed length) of each member."""
    data = open(path, "rb").read()
    pos, out = 0, []
    while pos < len(data):
        assert data[pos:pos + 2] == b"\x1f\x8b", f"no gzip member at {pos}"
        flg = data[pos + 3]
        extra = b""
        if flg & 4:
            xlen = int.from_bytes(data[pos + 10:pos + 12], "little")
            extra = data[pos + 12:pos + 12 + xlen]
        d = zlib.decompressobj(31)
        d.decompress(data[pos:])
        assert d.eof
        n = len(data) - pos - len(d.unused_data)
        out.append((pos, flg, extra, n))
        pos += n
    return out


def dt_field(extra):
    """The DT subfield of a gzip extra field, as a dict, or None."""
    i = 0
    while i + 4 <= len(extra):
        sid, ln = extra[i:i + 2], int.from_bytes(extra[i + 2:i + 4], "little")
        body = extra[i + 4:i + 4 + ln]
        if sid == b"DT" and ln >= 29:
            return {
                "version": body[0],
                "compressed": int.from_bytes(body[1:5], "little"),
                "uncompressed": int.from_bytes(body[5:9], "little"),
                "lines": int.from_bytes(body[9:13], "little"),
                "ts_min": int.from_bytes(body[13:21], "little"),
                "ts_max": int.from_bytes(body[21:29], "little"),
            }
        i += 4 + ln
    return None


def forge_dt_times(src, dst, member, ts_min, ts_max):
    """A copy of src whose DT field of one member says ts_min..ts_max (docs/format.md section 3:
    version u8, compressed u32, uncompressed u32, lines u32, ts_min u64, ts_max u64)."""
    data = bytearray(open(src, "rb").read())
    off, flg, extra, _ = [m for m in gzip_members(src) if dt_field(m[2])][member]
    i = 0
    while extra[i:i + 2] != b"DT":
        i += 4 + int.from_bytes(extra[i + 2:i + 4], "little")
    body = off + 12 + i + 4
    data[body + 13:body + 21] = ts_min.to_bytes(8, "little")
    data[body + 21:body + 29] = ts_max.to_bytes(8, "little")
    open(dst, "wb").write(bytes(data))
    return dst


def num(v):
    """A number that older DFTracer may have quoted."""
    return int(v) if isinstance(v, str) else v


def is_trace(name):
    """A trace file name (*.pfw, *.pfw.gz); the data directory also holds a README and a licence."""
    return name.endswith(".pfw") or name.endswith(".pfw.gz")


@pytest.fixture(scope="session")
def ref_dir():
    """The directory of DFTracer's traces; it is part of the repository, so missing is an error."""
    assert os.path.isdir(REF), f"the DFTracer sample traces are missing: {REF}"
    return REF


@pytest.fixture(scope="session")
def ref_files(ref_dir):
    files = sorted(os.path.join(ref_dir, f) for f in os.listdir(ref_dir) if is_trace(f))
    assert files, f"no trace files in {ref_dir}"
    return files


@pytest.fixture(scope="session")
def dask_cluster():
    """A real distributed.LocalCluster of 2 worker processes (one thread each, no dashboard),
    shared by the tests of the Dask paths; skipped, with the reason, where pandas or
    distributed is not installed."""
    need("pandas", "distributed")
    from distributed import LocalCluster
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None) as cluster:
        yield cluster


@pytest.fixture(scope="session")
def client(dask_cluster):
    """A distributed.Client on dask_cluster."""
    from distributed import Client
    with Client(dask_cluster) as c:
        yield c


@pytest.fixture(scope="session")
def real_trace(tmp_path_factory):
    """A trace written by the real dftrace library (examples/cpp/train_loop)."""
    d = tmp_path_factory.mktemp("real")
    env = dict(os.environ, DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(d / "trace"))
    subprocess.run([TRAIN_LOOP], check=True, env=env, timeout=120, capture_output=True)
    files = sorted(d.glob("*.pfw.gz"))
    assert len(files) == 1
    return files[0]
