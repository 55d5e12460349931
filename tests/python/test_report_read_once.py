"""test_report_read_once.py: `dftrace report` opens each trace file once: its events (for the
charts) and the analysis' sections come from one pass over the files. The report is run under
dftrace's own I/O tracer (`dftrace run --data-dirs`), and the opens of the trace files are
counted in the trace it writes (named without .pfw: the tracer never traces a trace file's I/O,
and the reader goes by a file's bytes, not its name)."""
import gzip
import os
import subprocess

import pytest

from conftest import read_traces


def trace_lines(pid, rank):
    """A small run of one rank: a start event with its rank, steps with compute and I/O."""
    lines = ['{"id":1,"name":"PR","cat":"dftracer","pid":%d,"tid":%d,"ph":"M",'
             '"args":{"name":"rank","value":%d}}' % (pid, pid, rank)]
    ts = 1000
    for k in range(20):
        lines.append('{"id":%d,"name":"step","cat":"compute","pid":%d,"tid":%d,"ts":%d,'
                     '"dur":100,"ph":"X","args":{"step":%d,"level":1,"p_idx":-1}}'
                     % (10 + 3 * k, pid, pid, ts, k))
        lines.append('{"id":%d,"name":"forward","cat":"compute","pid":%d,"tid":%d,"ts":%d,'
                     '"dur":40,"ph":"X","args":{"level":2,"p_idx":%d}}'
                     % (11 + 3 * k, pid, pid, ts + 5, 10 + 3 * k))
        lines.append('{"id":%d,"name":"read","cat":"POSIX","pid":%d,"tid":%d,"ts":%d,'
                     '"dur":30,"ph":"X","args":{"ret":4096,"level":2,"p_idx":%d}}'
                     % (12 + 3 * k, pid, pid, ts + 50, 10 + 3 * k))
        ts += 120
    return "[\n" + "\n".join(lines) + "\n]\n"


def count_opens(tmp_path, compare):
    """Runs `dftrace report` on a run of two ranks (with --compare BASE, another run of two
    ranks, when compare) under the I/O tracer; {path: opens} of every trace file of both runs."""
    pytest.importorskip("matplotlib")
    pytest.importorskip("pandas")
    cli = os.path.join(os.environ.get("DFTRACE_BUILD_DIR", ""), "tools", "dftrace")
    if not os.path.exists(cli):
        pytest.skip("the dftrace command is not built (%s)" % cli)
    io_lib = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "libdftrace_io.so")
    if not os.path.exists(io_lib):
        pytest.skip("the I/O tracer is not built (%s)" % io_lib)
    data = tmp_path / "run"
    data.mkdir()
    paths, base = [], []
    for rank in range(2):
        p = data / ("t-%d.gz" % rank)
        with gzip.open(p, "wt") as f:
            f.write(trace_lines(100 + rank, rank))
        paths.append(str(p))
    if compare:
        (data / "base").mkdir()
        for rank in range(2):
            p = data / "base" / ("b-%d.gz" % rank)
            with gzip.open(p, "wt") as f:
                f.write(trace_lines(200 + rank, rank))
            base.append(str(p))
    io_dir = tmp_path / "io"
    io_dir.mkdir()
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DFTRACE_", "DFTRACER_")) and k != "LD_PRELOAD"}
    env["PYTHONPATH"] = os.pathsep.join(
        os.path.abspath(x) for x in os.environ.get("PYTHONPATH", "").split(os.pathsep) if x)
    out = tmp_path / "r.html"
    cmd = [cli, "run", "--prefix", str(io_dir / "io"), "--data-dirs", str(data), "--",
           cli, "report", *paths, "-o", str(out)] + (["--compare", ",".join(base)]
                                                      if compare else [])
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    page = out.read_text()
    assert 'id="bound-by"' in page and 'id="steps"' in page, "the report lacks its sections"
    if compare:
        assert 'id="compare"' in page, "the report lacks its comparison"
    opens = {path: 0 for path in paths + base}
    for t in read_traces(str(io_dir)):
        files = {r["args"]["value"]: r["args"]["name"] for r in t.records
                 if r.get("name") == "FH"}
        for e in t.events:
            if e.get("cat") == "POSIX" and e.get("name", "").startswith("open"):
                name = files.get(e.get("args", {}).get("fhash"))
                if name in opens:
                    opens[name] += 1
    return opens


def test_report_opens_each_trace_once(tmp_path):
    opens = count_opens(tmp_path, compare=False)
    assert opens == {path: 1 for path in opens}, opens


def test_report_compare_opens_each_trace_once(tmp_path):
    """With --compare BASE, the new run is read once for the report and its comparison, and
    the base run once."""
    opens = count_opens(tmp_path, compare=True)
    assert opens == {path: 1 for path in opens}, opens
