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


COPIES = """[
{"id":1,"name":"FH","cat":"dftracer","pid":1,"tid":1,"ph":"M","args":{"name":"/d/src","value":11}}
{"id":2,"name":"FH","cat":"dftracer","pid":1,"tid":1,"ph":"M","args":{"name":"/d/dst","value":22}}
{"id":3,"name":"open","cat":"POSIX","pid":1,"tid":1,"ts":900,"dur":1,"ph":"X","args":{"fhash":11,"flags":0,"mode":0,"ret":3}}
{"id":4,"name":"open","cat":"POSIX","pid":1,"tid":1,"ts":901,"dur":1,"ph":"X","args":{"fhash":22,"flags":577,"mode":420,"ret":4}}
{"id":5,"name":"copy_file_range","cat":"POSIX","pid":1,"tid":1,"ts":1000,"dur":10,"ph":"X","args":{"fhash":11,"from_hash":11,"to_hash":22,"fd":3,"to_fd":4,"count":4096,"offset":-1,"to_offset":-1,"ret":4096}}
{"id":6,"name":"copy_file_range","cat":"POSIX","pid":1,"tid":1,"ts":1010,"dur":20,"ph":"X","args":{"fhash":11,"from_hash":11,"to_hash":22,"fd":3,"to_fd":4,"count":4096,"offset":-1,"to_offset":-1,"ret":1000}}
{"id":7,"name":"sendfile","cat":"POSIX","pid":1,"tid":1,"ts":1040,"dur":5,"ph":"X","args":{"fhash":11,"from_hash":11,"fd":3,"to_fd":9,"count":300,"offset":0,"to_offset":-1,"ret":300}}
{"id":8,"name":"splice","cat":"POSIX","pid":1,"tid":1,"ts":1050,"dur":7,"ph":"X","args":{"fhash":22,"to_hash":22,"fd":8,"to_fd":4,"count":64,"offset":-1,"to_offset":-1,"ret":64}}
{"id":9,"name":"sendfile","cat":"POSIX","pid":1,"tid":1,"ts":1060,"dur":3,"ph":"X","args":{"fhash":11,"fd":3,"to_fd":4,"count":500,"ret":500}}
{"id":10,"name":"copy_file_range","cat":"POSIX","pid":1,"tid":1,"ts":1070,"dur":2,"ph":"X","args":{"fhash":11,"from_hash":11,"to_hash":22,"fd":3,"to_fd":4,"count":10,"offset":-1,"to_offset":-1,"ret":-1,"errno":9}}
]
"""


def test_a_copy_is_read_from_its_source_and_written_to_its_target(tmp_path):
    """copy_file_range, sendfile, splice: `ret` bytes read from the file of from_hash, written
    to that of to_hash; a copy written without them (dftrace before) is counted as neither (a
    metadata call, as before); a failed one moves nothing. The job's time counts each copy
    once (as the read when its source is traced), each file's in full."""
    trace = tmp_path / "t.pfw"
    trace.write_text(COPIES)
    stat = run_json("stat", "--json", str(trace))
    rows = {r["path"]: r for r in stat["io_files"] if r["cat"] == "POSIX"}
    assert (rows["/d/src"]["read_bytes"], rows["/d/src"]["read_calls"]) == (4096 + 1000 + 300, 4)
    assert (rows["/d/dst"]["write_bytes"], rows["/d/dst"]["write_calls"]) == (4096 + 1000 + 64, 4)
    assert (rows["/d/src"]["write_bytes"], rows["/d/dst"]["read_bytes"]) == (0, 0)
    io = run_json("analyze", "--json", str(trace))["io"]
    assert (io["read_bytes"], io["reads"]) == (5396, 4)
    assert (io["write_bytes"], io["writes"]) == (5160, 4)
    # time: each copy once in the job (10 + 20 + 5 + 7 + 2 us), in full per file
    assert io["read_ns"] + io["write_ns"] == io["data_ns"] == 44000
    files = {f["file"]: f for f in io["files"]}
    assert files["/d/src"]["read_ns"] == 37000 and files["/d/dst"]["write_ns"] == 39000
    # the two transfers at the descriptors' offsets from 0: consecutive on each end
    assert (files["/d/src"]["consecutive_reads"], files["/d/dst"]["consecutive_writes"]) == (1, 2)
    assert io["access_sizes"]["read"]["1K-10K"] == 1 and io["access_sizes"]["write"]["0-100"] == 1
    # the opens and the copy without from_hash and to_hash
    assert io["metadata_ops"] == 3
    # what no file's figures hold is said: the copy whose ends are not written, the sendfile
    # to a socket (read into no file), the splice from a pipe (written from no file)
    assert io["copies"] == {"unattributed_calls": 1, "unattributed_bytes": 500,
                            "read_to_no_file_bytes": 300, "written_from_no_file_bytes": 64}
    text = subprocess.run([CLI, "analyze", str(trace)], capture_output=True, text=True,
                          timeout=120)
    assert text.returncode == 0, text.stderr
    assert "copies not attributed: 0.001 MB in 1 in-kernel copies" in text.stdout, text.stdout


# Aggregated copies: as dftrace writes them (the ends in the record's key, written plainly),
# one whose target is a pipe, and one written before the ends were keyed (from_hash and to_hash
# folded into _min, _max and _sum: which calls had which end is lost).
AGGREGATED_COPIES = """[
{"id":1,"name":"FH","cat":"dftracer","pid":1,"tid":1,"ph":"M","args":{"name":"/d/src","value":11}}
{"id":2,"name":"FH","cat":"dftracer","pid":1,"tid":1,"ph":"M","args":{"name":"/d/dst","value":22}}
{"name":"copy_file_range","cat":"POSIX","pid":1,"tid":1,"ts":0,"ph":"A","args":{"fhash":11,"from_hash":11,"to_hash":22,"dft_cnt":3,"dur_min":1,"dur_max":5,"dur_sum":9,"ret_min":0,"ret_max":4096,"ret_sum":6000}}
{"name":"splice","cat":"POSIX","pid":1,"tid":1,"ts":0,"ph":"A","args":{"fhash":11,"from_hash":11,"dft_cnt":2,"dur_min":1,"dur_max":1,"dur_sum":2,"ret_min":100,"ret_max":200,"ret_sum":300}}
{"name":"sendfile","cat":"POSIX","pid":1,"tid":1,"ts":0,"ph":"A","args":{"fhash_min":11,"fhash_max":11,"fhash_sum":22,"from_hash_min":11,"from_hash_max":11,"from_hash_sum":22,"to_hash_min":22,"to_hash_max":22,"to_hash_sum":44,"dft_cnt":2,"dur_min":1,"dur_max":2,"dur_sum":3,"ret_min":10,"ret_max":40,"ret_sum":50}}
]
"""


def test_aggregated_copies_are_read_from_their_source_and_written_to_their_target(tmp_path):
    trace = tmp_path / "t.pfw"
    trace.write_text(AGGREGATED_COPIES)
    stat = run_json("stat", "--json", str(trace))
    rows = {r["path"]: r for r in stat["io_files"] if r["cat"] == "POSIX"}
    assert (rows["/d/src"]["read_bytes"], rows["/d/src"]["read_calls"]) == (6300, 5)
    assert (rows["/d/dst"]["write_bytes"], rows["/d/dst"]["write_calls"]) == (6000, 3)
    assert (rows["/d/src"]["write_bytes"], rows["/d/dst"]["read_bytes"]) == (0, 0)
    io = run_json("analyze", "--json", str(trace))["io"]
    assert (io["read_bytes"], io["reads"], io["write_bytes"], io["writes"]) == (6300, 5, 6000, 3)
    files = {f["file"]: (f["read_bytes"], f["write_bytes"]) for f in io["files"]}
    assert files == {"/d/src": (6300, 0), "/d/dst": (0, 6000)}
    assert io["copies"] == {"unattributed_calls": 2, "unattributed_bytes": 50,
                            "read_to_no_file_bytes": 300, "written_from_no_file_bytes": 0}
