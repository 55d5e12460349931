"""test_report_io.py: `dftrace report`'s I/O section adds the bytes of the calls that move data,
by their exact names (as `dftrace stat` does): a readlink or readdir is not a read, and stdio's
folded character and line calls count their `bytes`; an in-kernel copy counts its bytes on
each end that is a traced file."""
import os
import re
import subprocess

import pytest

TRACE = """[
{"id":1,"name":"FH","cat":"dftracer","pid":1,"tid":1,"ph":"M","args":{"name":"/d/f","value":11}}
{"id":2,"name":"read","cat":"POSIX","pid":1,"tid":1,"ts":1000,"dur":10,"ph":"X","args":{"fhash":11,"fd":3,"count":3000000,"ret":3000000,"level":1,"p_idx":-1}}
{"id":3,"name":"readlink","cat":"POSIX","pid":1,"tid":1,"ts":1020,"dur":10,"ph":"X","args":{"fhash":11,"ret":1000000,"level":1,"p_idx":-1}}
{"id":4,"name":"readdir","cat":"POSIX","pid":1,"tid":1,"ts":1030,"dur":1,"ph":"X","args":{"fhash":11,"ret":1,"level":1,"p_idx":-1}}
{"id":5,"name":"fputc","cat":"STDIO","pid":1,"tid":1,"ts":1040,"dur":10,"ph":"X","args":{"fhash":11,"calls":4000000,"bytes":4000000,"level":1,"p_idx":-1}}
{"id":6,"name":"fread","cat":"STDIO","pid":1,"tid":1,"ts":1060,"dur":10,"ph":"X","args":{"fhash":11,"size":1000,"count":1000,"ret":1000,"level":1,"p_idx":-1}}
{"id":7,"name":"FH","cat":"dftracer","pid":1,"tid":1,"ph":"M","args":{"name":"/d/g","value":22}}
{"id":8,"name":"copy_file_range","cat":"POSIX","pid":1,"tid":1,"ts":1080,"dur":10,"ph":"X","args":{"fhash":11,"from_hash":11,"to_hash":22,"fd":3,"to_fd":4,"count":2000000,"offset":-1,"to_offset":-1,"ret":2000000,"level":1,"p_idx":-1}}
{"id":9,"name":"sendfile","cat":"POSIX","pid":1,"tid":1,"ts":1100,"dur":10,"ph":"X","args":{"fhash":11,"from_hash":11,"fd":3,"to_fd":9,"count":1000000,"offset":-1,"to_offset":-1,"ret":1000000,"level":1,"p_idx":-1}}
{"id":10,"name":"sendfile","cat":"POSIX","pid":1,"tid":1,"ts":1120,"dur":10,"ph":"X","args":{"fhash":11,"fd":3,"to_fd":9,"count":5000000,"ret":5000000,"level":1,"p_idx":-1}}
]
"""


def test_report_counts_the_bytes_of_data_calls_only(tmp_path):
    pytest.importorskip("matplotlib")
    cli = os.path.join(os.environ.get("DFTRACE_BUILD_DIR", ""), "tools", "dftrace")
    if not os.path.exists(cli):
        pytest.skip("the dftrace command is not built (%s)" % cli)
    trace = tmp_path / "t.pfw"
    trace.write_text(TRACE)
    out = tmp_path / "r.html"
    p = subprocess.run([cli, "report", str(trace), "-o", str(out)], capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    moved = re.search(r"([0-9.]+) MB moved by read and write calls", out.read_text())
    assert moved, "no I/O section"
    # read 3 MB + fputc's 4 MB + fread's 1,000 items of 1,000 B; a copy of 2 MB read and
    # written, a sendfile to a socket 1 MB read (one written before from_hash: neither)
    assert moved.group(1) == "13.0"
