# test_validate_span.py: dftrace validate reports an event that starts before its process's
# "start" event or ends after its "end" event (a first event stamped minutes before its process
# started is an error validate names).
import json

from conftest import run


def meta(pid):
    return {"id": 1, "name": "process_name", "ph": "M", "pid": pid, "tid": pid,
            "args": {"name": f"p{pid}"}}


def ev(i, pid, name, ts, dur, cat="compute"):
    return {"id": i, "name": name, "cat": cat, "pid": pid, "tid": pid, "ts": ts, "dur": dur,
            "ph": "X", "args": {"level": 1}}


def write(path, objs, close=True):
    path.write_text("[\n" + "\n".join(json.dumps(o) for o in objs) + ("\n]\n" if close else "\n"))
    return path


def span_findings(p):
    return [l for l in p.stdout.splitlines() if "process's start event" in l or
            "process's end event" in l]


def test_events_inside_start_and_end_are_fine(tmp_path):
    f = write(tmp_path / "ok.pfw", [
        ev(2, 7, "start", 1000, 0, "dftracer"), ev(3, 7, "a", 1000, 10), ev(4, 7, "b", 2000, 3000),
        {"id": 5, "name": "i", "cat": "c", "pid": 7, "tid": 7, "ts": 4999, "ph": "i"},
        ev(6, 7, "end", 5000, 0, "dftracer")])
    p = run("validate", f, check=False)
    assert p.returncode == 0, p.stdout
    assert span_findings(p) == []


def test_an_event_before_start_is_an_error_with_its_line(tmp_path):
    f = write(tmp_path / "early.pfw", [
        ev(2, 7, "start", 1000, 0, "dftracer"), ev(3, 7, "first", 400, 700),
        ev(4, 7, "second", 900, 50), ev(5, 7, "end", 5000, 0, "dftracer")])
    p = run("validate", f, check=False)
    assert p.returncode == 1
    found = span_findings(p)
    assert len(found) == 1, p.stdout  # one finding: the earliest event
    assert f"{f}:3: error: pid 7: an event starts at ts 400, 600 us before its process's start " \
           "event (line 2)" in found[0]


def test_an_event_after_end_is_an_error(tmp_path):
    # The parent is written after its child (as dftrace does) and ends after the end event.
    f = write(tmp_path / "late.pfw", [
        ev(2, 7, "start", 1000, 0, "dftracer"), ev(3, 7, "child", 4000, 100),
        ev(4, 7, "end", 5000, 0, "dftracer"), ev(5, 7, "parent", 3000, 2500)])
    p = run("validate", f, check=False)
    assert p.returncode == 1
    found = span_findings(p)
    assert len(found) == 1
    assert f"{f}:5: error: pid 7: an event ends at ts 5500, 500 us after its process's end " \
           "event (line 4)" in found[0]


def test_each_process_is_checked_against_its_own_span(tmp_path):
    # pid 8 starts later than pid 7's events: no finding; pid 9 has no start/end: no finding.
    f = write(tmp_path / "two.pfw", [
        meta(7), meta(8),
        ev(2, 7, "start", 1000, 0, "dftracer"), ev(3, 8, "start", 3000, 0, "dftracer"),
        ev(4, 7, "a", 1500, 10), ev(5, 8, "b", 3500, 10), ev(6, 8, "early", 2000, 10),
        ev(7, 9, "anywhere", 1, 10**9),
        ev(8, 7, "end", 4000, 0, "dftracer"), ev(9, 8, "end", 6000, 0, "dftracer")])
    p = run("validate", f, check=False)
    found = span_findings(p)
    assert len(found) == 1 and "pid 8: an event starts at ts 2000" in found[0], p.stdout


def test_the_span_check_works_across_gzip_members(tmp_path):
    # A trace written by the test generator: events spread over many members, all inside.
    from conftest import gen
    g = gen(tmp_path / "g.pfw.gz", 5000, member_bytes=4096)
    p = run("validate", g, check=False)
    assert span_findings(p) == [], p.stdout
