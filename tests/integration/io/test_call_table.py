"""test_call_table.py: the table of interposed calls (include/dftrace/io_calls.def) is what
libdftrace_io defines and what `dftrace stat` and `dftrace analyze` classify: every function the
library exports for interposition is a row, every row is a function it defines, and the bytes
of a call that is no read or write (readlink's length, readdir's 1 or 0) are never I/O bytes."""
import json
import os
import re
import subprocess

BIN = os.environ["DFTRACE_TEST_BIN"]
CLI = os.environ["DFTRACE_CLI"]
LIB = os.environ["DFTRACE_IO_LIB"]
SOURCE = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                       ".."))
# The library's own entry points (called by libdftrace), which interpose nothing.
OWN = {"dftrace_io_bind", "dftrace_io_unbind", "dftrace_io_flush_folded"}


def table_rows():
    """(category, symbol, event, shape, class, bytes) of each row of io_calls.def."""
    with open(os.path.join(SOURCE, "include", "dftrace", "io_calls.def"), encoding="utf-8") as f:
        text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
    text = text.split("#endif", 1)[1]  # after the default definition
    return re.findall(r'DFTRACE_IO_CALL\(\s*(\w+),\s*(\w+),\s*"(\w*)",\s*(\w+),\s*(\w+),\s*(\w+),',
                      text)


def exported_functions():
    out = subprocess.run(["nm", "-D", "--defined-only", LIB], capture_output=True, text=True,
                         check=True).stdout
    return {l.split()[-1].split("@")[0] for l in out.splitlines() if " T " in l or " W " in l}


def test_the_library_defines_exactly_the_tables_functions():
    rows = table_rows()
    symbols = [r[1] for r in rows]
    assert len(symbols) == len(set(symbols)), "a function in two rows"
    exported = exported_functions() - OWN
    with_hdf5 = any(s.startswith("H5") for s in exported)
    expected = {s for cat, s, *_ in rows if with_hdf5 or cat != "H5"}
    assert not expected - exported, "rows the library does not define: %s" % sorted(
        expected - exported)
    assert not exported - expected, "functions the table lacks: %s" % sorted(exported - expected)


TRACE = """[
{"id":1,"name":"FH","cat":"dftracer","pid":1,"tid":1,"ph":"M","args":{"name":"/d/f","value":11}}
{"id":2,"name":"read","cat":"POSIX","pid":1,"tid":1,"ts":1000,"dur":10,"ph":"X","args":{"fhash":11,"fd":3,"count":3000,"ret":3000,"level":1,"p_idx":-1}}
{"id":3,"name":"readlink","cat":"POSIX","pid":1,"tid":1,"ts":1020,"dur":10,"ph":"X","args":{"fhash":11,"ret":1000000,"level":1,"p_idx":-1}}
{"id":4,"name":"readlinkat","cat":"POSIX","pid":1,"tid":1,"ts":1025,"dur":1,"ph":"X","args":{"fhash":11,"ret":70000,"level":1,"p_idx":-1}}
{"id":5,"name":"readdir","cat":"POSIX","pid":1,"tid":1,"ts":1030,"dur":1,"ph":"X","args":{"fhash":11,"ret":1,"level":1,"p_idx":-1}}
{"id":6,"name":"readdir64","cat":"POSIX","pid":1,"tid":1,"ts":1035,"dur":1,"ph":"X","args":{"fhash":11,"ret":1,"level":1,"p_idx":-1}}
{"id":7,"name":"pwrite64","cat":"POSIX","pid":1,"tid":1,"ts":1040,"dur":10,"ph":"X","args":{"fhash":11,"fd":3,"count":500,"offset":0,"ret":500,"level":1,"p_idx":-1}}
]
"""


def run_json(*args):
    p = subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


def test_stat_and_analyze_count_no_bytes_of_readlink_or_readdir(tmp_path):
    trace = tmp_path / "t.pfw"
    trace.write_text(TRACE)
    stat = run_json("stat", "--json", str(trace))
    (row,) = [r for r in stat["io_files"] if r["cat"] == "POSIX"]
    assert (row["read_bytes"], row["read_calls"]) == (3000, 1)
    assert (row["write_bytes"], row["write_calls"]) == (500, 1)
    io = run_json("analyze", "--json", str(trace))["io"]
    assert (io["read_bytes"], io["reads"]) == (3000, 1)
    assert (io["write_bytes"], io["writes"]) == (500, 1)
    assert io["metadata_ops"] == 4  # readlink, readlinkat, readdir, readdir64
