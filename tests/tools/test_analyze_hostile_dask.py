# test_analyze_hostile_dask.py: the hostile traces of test_analyze_hostile.py read by the other
# faces of the engine: dftrace.analyze on a LocalCluster of 2 workers, and `dftrace report`'s
# one read (read_with_partial) with its findings section. Each gives the document of
# `dftrace analyze --json --allow-damaged`, the same damage listed.
import html
import json
import os

import pytest

from conftest import need, run
from test_analyze_hostile import BIG, T0, X, proc, write

need("pandas", "distributed")
import dftrace  # noqa: E402
from dftrace import _analyze, _read, report_analysis  # noqa: E402


def cases(d):
    """name -> paths: each hostile case of test_analyze_hostile.py, written under d."""
    def w(name, text):
        return write(d / name, text)
    c = {}
    c["bad times"] = [w("t.pfw.gz", proc(12, [X(12, "fwd", "compute", T0 + 100, -50),
                                             X(12, "fwd", "compute", 2 ** 64 - 5, 10),
                                             X(12, "read", "POSIX", T0 + 200, 10, ret=5)],
                                         rank=0))]
    c["bad bytes"] = [w("b.pfw.gz", proc(20, [X(20, "write", "POSIX", T0, 5, ret=BIG,
                                               fhash="h"),
                                             X(20, "write", "POSIX", T0 + 9, 5, ret=3,
                                               fhash="h")], rank=0))]
    c["byte sum"] = [w("s.pfw.gz", proc(21, [X(21, "write", "POSIX", T0 + i, 1, ret=BIG - 1,
                                              fhash="h") for i in range(3)], rank=0))]
    c["one pid, two ranks"] = [
        w("r0.pfw.gz", proc(7, [X(7, "step", "compute", T0, 100)], rank=0)),
        w("r1.pfw.gz", proc(7, [X(7, "step", "compute", T0, 300)], rank=1))]
    c["pid reused"] = [w("p0.pfw.gz", proc(9, [X(9, "fwd", "compute", T0, 100)])),
                       w("p1.pfw.gz", proc(9, [X(9, "fwd", "compute", T0 + 500, 10)],
                                           start_ts=T0 + 400))]
    c["nested steps"] = [w("n.pfw.gz", proc(24, [X(24, "step", "compute", T0 + 10, 40),
                                                X(24, "step", "compute", T0, 100)], rank=0))]
    os.link(c["nested steps"][0], str(d / "n2.pfw.gz"))
    c["named twice"] = [str(d / "n2.pfw.gz"), c["nested steps"][0]]
    return c


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return cases(tmp_path_factory.mktemp("hostile"))


@pytest.mark.parametrize("name", ["bad times", "bad bytes", "byte sum", "one pid, two ranks",
                                  "pid reused", "nested steps", "named twice"])
def test_dask_and_report_list_the_same_damage(client, hostile, name):
    paths = hostile[name]
    p = run("analyze", "--json", "--allow-damaged", *paths)
    want = json.loads(p.stdout)
    if name == "named twice":
        assert want["inputs"]["warnings"] and want["inputs"]["files"] == 1
    assert dict(dftrace.analyze(paths, allow_damaged=True)) == want, name
    assert dict(dftrace.analyze(paths, client=client, allow_damaged=True)) == want, name
    files = _read.trace_files(paths)
    _, partial = _read.read_with_partial(files, ["ret"])
    assert dict(_analyze.from_partial(partial, allow_damaged=True)) == want, name
    body = report_analysis.sections(files, partial=partial)[0][2]
    lost = want["inputs"]["damaged"]
    assert (not want["inputs"]["complete"]) == ("could not be read" in body), name
    if lost:
        assert html.escape(lost[0]["what"][:150]) in body, name
