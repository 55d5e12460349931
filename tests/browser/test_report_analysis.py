# test_report_analysis.py: the report's sections made from `dftrace analyze` and `dftrace diff`
# (findings, what bound the steps, overlap, stragglers, collectives, the I/O characterisation,
# --compare),
# rendered in headless Debian chromium with the network cut off: present, drawn, no script or
# console error, and every figure the page shows equal to `dftrace analyze --json` (or
# `dftrace diff --json`) on a synthetic run of 4 ranks with a straggler and I/O whose answers
# are known here; a run without steps or I/O says why in one line instead of an empty chart.
import gzip
import json
import os
import subprocess

from conftest import CLI
from test_report import render, report, sections

MS = 1_000_000
T0 = 1_700_000_000_000_000_000  # epoch ns
RANKS, STEPS, SLOW_RANK, SLOW_STEP = 4, 8, 2, 5
READ, WRITE = 65536, 1 << 20  # bytes per pread and per write


def write_proc(d, pid, rank, events):
    """One process's trace as dftrace writes it (ns, JSON lines, gzip'd); events are
    (name, cat, start, end, args), written when they end."""
    lines, meta = ["["], dict(cat="dftracer", pid=pid, tid=pid, ph="M")

    def line(**kw):
        lines.append(json.dumps(dict(id=len(lines), **kw), separators=(",", ":")))

    line(name="PR", **meta, args=dict(name="time_metric", value="ns"))
    line(name="HH", **meta, args=dict(name="node1", value=7))
    if rank is not None:
        line(name="PR", **meta, args=dict(name="rank", value=rank))
    line(name="FH", **meta, args=dict(name="/data/shard%d.bin" % rank, value="h%d" % rank))
    line(name="FH", **meta, args=dict(name="/ckpt/model.pt", value="hc"))
    line(name="start", cat="dftracer", pid=pid, tid=pid, ts=T0, dur=0, ph="X",
         args=dict(ppid=1))
    for name, cat, s, e, args in sorted(events, key=lambda x: (x[3], -x[2])):
        line(name=name, cat=cat, pid=pid, tid=pid, ts=T0 + s, dur=e - s, ph="X", args=args)
    line(name="end", cat="dftracer", pid=pid, tid=pid, ts=T0 + max(e[3] for e in events), dur=0,
         ph="X", args=dict(num_events=len(events)))
    path = os.path.join(str(d), "t-%d.pfw.gz" % pid)
    with gzip.open(path, "wt") as f:
        f.write("\n".join(lines + ["]"]) + "\n")
    return path


def rank_run(d, slow_ms=30, steps=True, io=True):
    """RANKS ranks of STEPS steps (compute, comm, a pread of READ bytes and a write of WRITE
    bytes each); rank SLOW_RANK's step SLOW_STEP is slow_ms longer (a straggler)."""
    os.makedirs(str(d), exist_ok=True)
    paths = []
    for r in range(RANKS):
        evs, t = [], 0
        for s in range(STEPS):
            dur = 40 * MS + (slow_ms * MS if (r, s) == (SLOW_RANK, SLOW_STEP) else 0) + r * 1000
            if steps:
                evs.append(("step", "compute", t, t + dur, dict(step=s, epoch=0)))
            evs.append(("forward", "compute", t + MS, t + 20 * MS, {}))
            evs.append(("allreduce", "comm", t + 15 * MS, t + 30 * MS, {}))
            if io:
                evs.append(("pread", "POSIX", t + 31 * MS, t + 33 * MS,
                            dict(fhash="h%d" % r, fd=7, ret=READ, offset=s * READ)))
                evs.append(("write", "POSIX", t + 34 * MS, t + 36 * MS,
                            dict(fhash="hc", fd=5, ret=WRITE)))
            t += dur + 2 * MS
        paths.append(write_proc(d, 1000 + 100 * r, r, evs))
    return paths


def analyze_json(paths):
    p = subprocess.run([CLI, "analyze", "--json", *map(str, paths)], capture_output=True,
                       text=True, timeout=300, check=True)
    return json.loads(p.stdout)


def ms(ns):
    return "%.3f" % (ns / 1e6)


def label(r, item):
    g = r["groups"][item["group"]]
    return "rank %d" % g["rank"]


def body(cells):
    """A table's rows without its header row."""
    return cells[1:]


def test_sections_show_the_analysis(modules, tmp_path):
    paths = rank_run(tmp_path / "run")
    r = analyze_json(paths)
    page = report(tmp_path, "run", *paths)
    res = render(modules, page, tmp_path / "run.png")
    assert res["requests"] == [] and res["errors"] == []
    s = sections(res)
    for sid in ("findings", "bound-by", "overlap", "stragglers", "io-characterisation"):
        assert sid in s, sid
    for sid in ("bound-by", "overlap", "stragglers", "io-characterisation"):
        assert s[sid]["svgs"] >= 1, sid
    assert "compare" not in s  # only with --compare

    # findings: one row per finding of the analysis, in its order
    assert [row[:4] for row in body(s["findings"]["cells"][0])] == [
        [f["severity"], f["rule"], f["metric"], "%.3f" % f["value"]] for f in r["findings"]]
    assert "stragglers" in [f["rule"] for f in r["findings"]]

    # what bound the steps: count, p50, p99 and the exclusive split of all steps' time
    st = r["steps"]
    assert st["count"] == RANKS * STEPS
    summary, split = s["bound-by"]["cells"]
    assert body(summary) == [[str(st["count"]), "step", ms(st["p50_ns"]), ms(st["p99_ns"])]]
    parts = ("compute", "comm", "io", "data", "other")
    assert [row[1] for row in body(split)] == [ms(st["bound_by"][p + "_ns"]) for p in parts] + [
        ms(st["total_ns"])]
    assert sum(st["bound_by"][p + "_ns"] for p in parts) == st["total_ns"]

    # overlap: a row per rank, its span and each layer's union
    rows = body(s["overlap"]["cells"][0])
    assert [row[0] for row in rows] == ["rank %d" % k for k in range(RANKS)]
    layers = r["layers"]
    for row, g in zip(rows, r["groups"]):
        assert row[1:2 + len(layers)] == [ms(g["span_ns"])] + [ms(g["union_ns"][l])
                                                               for l in layers]

    # stragglers: the slow rank's slow step, as the analysis found it
    imb, strag = s["stragglers"]["cells"]
    assert body(imb)[0][0] == str(r["imbalance"]["steps_compared"]) == str(STEPS)
    assert body(imb)[0][1] == "%.3f" % r["imbalance"]["max_over_median_max"]
    assert body(strag) == [[label(r, x), x["step"], ms(x["dur_ns"]), ms(x["median_ns"]),
                            "%.2f" % (x["dur_ns"] / x["median_ns"])] for x in r["stragglers"]]
    assert [label(r, x) for x in r["stragglers"]] == ["rank %d" % SLOW_RANK]

    # I/O: the totals, the access-size histograms and the heat map's bytes per rank
    io = r["io"]
    totals, hist, common, heat, files = s["io-characterisation"]["cells"]
    assert body(totals)[0][:2] == [str(io["read_bytes"]), str(io["reads"])]
    assert io["read_bytes"] == RANKS * STEPS * READ and io["write_bytes"] == RANKS * STEPS * WRITE
    acc = io["access_sizes"]
    assert [row[0] for row in body(hist)][:10] == list(acc["read"])
    assert [[int(row[1]), int(row[2])] for row in body(hist)[:10]] == [
        [acc["read"][b], acc["write"][b]] for b in acc["read"]]
    assert acc["read"]["10K-100K"] == RANKS * STEPS
    assert acc["write"]["100K-1M"] == RANKS * STEPS  # 1 MiB: upper bounds are inclusive
    bw = {label(r, g): g for g in io["bandwidth"]["groups"]}
    assert body(heat) == [["rank %d" % k, str(sum(bw["rank %d" % k]["read_bytes"])),
                           str(sum(bw["rank %d" % k]["write_bytes"]))] for k in range(RANKS)]
    assert all(row[1:] == [str(STEPS * READ), str(STEPS * WRITE)] for row in body(heat))
    assert [row[0] for row in body(files)] == [f["file"] for f in io["files"]]


def test_without_steps_or_io_each_section_says_why(modules, tmp_path):
    paths = rank_run(tmp_path / "bare", steps=False, io=False)
    r = analyze_json(paths)
    assert r["steps"]["count"] == 0 and r["io"]["reads"] == r["io"]["writes"] == 0
    page = report(tmp_path, "bare", *paths)
    res = render(modules, page, tmp_path / "bare.png")
    assert res["requests"] == [] and res["errors"] == []
    s = sections(res)
    for sid, why in (("bound-by", "No steps"), ("stragglers", "No steps"),
                     ("io-characterisation", "No I/O calls"), ("collectives", "No collectives")):
        assert s[sid]["svgs"] == 0 and s[sid]["tables"] == 0, sid
        assert s[sid]["first"].startswith(why), (sid, s[sid]["first"])
    assert s["overlap"]["svgs"] >= 1  # the layers' unions need no steps


def coll_run(d):
    """4 ranks: comm.all_reduce in two groups of 2 ("0-1", "2-3", told apart by comm_group
    only) and comm.barrier over all 4, 6 calls each; rank 1 is 3 ms late at every other
    all_reduce of its group, rank 3 1 us late at each of its group's, rank 2 5 ms late at the
    barriers; each all_reduce partly hidden by a forward."""
    os.makedirs(str(d), exist_ok=True)
    paths = []
    for r in range(4):
        evs, t = [], 0
        grp = "0-1" if r < 2 else "2-3"
        for k in range(6):
            a = t + (3 * MS if (r == 1 and k % 2) else 0) + (1000 if r == 3 else 0)
            evs.append(("forward", "compute", t, a + MS, {}))
            evs.append(("all_reduce", "comm", a, t + 5 * MS,
                        dict(comm_size=2, comm_rank=r % 2, comm_group=grp, bytes=64)))
            b = t + 6 * MS + (5 * MS if r == 2 else 0)
            evs.append(("barrier", "comm", b, t + 12 * MS,
                        dict(comm_size=4, comm_rank=r, comm_group="0-3")))
            t += 20 * MS
        paths.append(write_proc(d, 1000 + 100 * r, r, evs))
    return paths


def test_collectives_section(modules, tmp_path):
    paths = coll_run(tmp_path / "coll")
    r = analyze_json(paths)
    c = r["collectives"]
    assert [(o["op"], o["comm_group"], o["instances"]) for o in c["ops"]] == [
        ("comm.all_reduce", "0-1", 6), ("comm.all_reduce", "2-3", 6), ("comm.barrier", "0-3", 6)]
    page = report(tmp_path, "coll", *paths)
    res = render(modules, page, tmp_path / "coll.png")
    assert res["requests"] == [] and res["errors"] == []
    s = sections(res)["collectives"]
    assert s["svgs"] >= 1
    assert s["first"].startswith("%d instance(s) matched; %s ms" % (c["instances"],
                                                                    ms(c["wait_ns"])))
    per_op, per_rank, overlap = s["cells"]
    grp = {0: "rank 0", 1: "rank 1", 2: "rank 2", 3: "rank 3"}
    assert body(per_op) == [
        ["%s [%s]" % (o["op"], o["comm_group"]), str(o["comm_size"]), str(o["instances"]),
         str(o["unmatched_calls"]), ms(o["wait_ns"]), ms(o["spread_p50_ns"]),
         ms(o["spread_p99_ns"]), "%s (%d)" % (label(r, o["last"]), o["last"]["count"]), ""]
        for o in c["ops"]]
    assert [row[7] for row in body(per_op)] == ["rank 1 (3)", "rank 3 (6)", "rank 2 (6)"]
    assert body(per_rank) == [
        ["%s [%s]" % (o["op"], o["comm_group"]), label(r, x), str(x["calls"]), ms(x["wait_ns"]),
         str(x["last"]), ms(x["caused_ns"])] for o in c["ops"] for x in o["ranks"]]
    # rank 0 waits 3 ms at 3 all_reduces; rank 2 1 us at 6
    assert (body(per_rank)[0][3], body(per_rank)[2][3]) == (ms(9 * MS), ms(6000))
    assert body(overlap) == [
        [grp[g["rank"]], str(g["calls"]), ms(g["wait_ns"]), ms(g["comm_ns"]),
         ms(g["comm_overlapped_ns"]), "%.1f%%" % g["comm_overlap_pct"]] for g in c["groups"]]
    assert [row[0] for row in body(overlap)] == [grp[k] for k in range(4)]
    assert all(g["comm_overlapped_ns"] > 0 for g in c["groups"])


def test_compare_shows_dftrace_diff(modules, tmp_path):
    base = rank_run(tmp_path / "base", slow_ms=0)
    new = rank_run(tmp_path / "new", slow_ms=30)
    out = tmp_path / "cmp.html"
    subprocess.run([CLI, "report", *new, "-o", str(out), "--compare", str(tmp_path / "base")],
                   check=True, capture_output=True, text=True, timeout=600)
    d = json.loads(subprocess.run([CLI, "diff", str(tmp_path / "base"), ",".join(new), "--json"],
                                  capture_output=True, text=True, timeout=300).stdout)
    res = render(modules, out, tmp_path / "cmp.png")
    assert res["requests"] == [] and res["errors"] == []
    s = sections(res)
    metrics = body(s["compare"]["cells"][0])
    assert [row[0] for row in metrics] == list(d["metrics"])
    by = {row[0]: row for row in metrics}
    m = d["metrics"]["step.p99"]
    assert m["new"] > m["base"]  # the slow step is the p99 of the new run
    assert by["step.p99"][1:4] == [str(int(m["base"])), str(int(m["new"])), str(int(m["change"]))]
    e = d["metrics"]["events"]
    assert by["events"][1:3] == [str(int(e["base"])), str(int(e["new"]))]
    assert e["base"] == e["new"]  # the same events, one step slower
    assert len(base) == len(new) == RANKS


def test_compare_paths_with_commas(modules, tmp_path):
    # Runs in directories whose names hold a comma: each path reaches `dftrace diff` whole.
    base = rank_run(tmp_path / "base,1", slow_ms=0)
    new = rank_run(tmp_path / "new,1", slow_ms=30)
    out = tmp_path / "commas.html"
    p = subprocess.run([CLI, "report", str(tmp_path / "new,1"), "-o", str(out), "--compare",
                        str(tmp_path / "base,1")], capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    rb, rn = analyze_json(base), analyze_json(new)
    res = render(modules, out, tmp_path / "commas.png")
    assert res["requests"] == [] and res["errors"] == []
    by = {row[0]: row for row in body(sections(res)["compare"]["cells"][0])}
    assert by["events"][1:3] == [str(rb["inputs"]["events"]), str(rn["inputs"]["events"])]
    assert by["step.p99"][1:3] == [str(rb["steps"]["p99_ns"]), str(rn["steps"]["p99_ns"])]
    assert rn["steps"]["p99_ns"] > rb["steps"]["p99_ns"]


RING_PROG = os.environ.get("DFTRACE_RING_PROG", "")


def ring_trace(tmp_path):
    """A trace of the flight recorder (ring_prog, the library in ring mode): 20 steps of about
    100 ms, step 6 about 2 s; a 1 s ring and 2 steps of full detail after the slow step."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DFTRACE_", "DFTRACER_")) and k != "LD_PRELOAD"}
    env.update(DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(tmp_path / "ring" / "t"),
               DFTRACE_OUTPUT_MODE="ring", DFTRACE_RING_SECONDS="1", DFTRACE_RING_AFTER="2",
               DFTRACE_TRIGGER_STEP_FACTOR="3")
    subprocess.run([RING_PROG, "steps", "20", "6", "100"], env=env, check=True,
                   capture_output=True, timeout=120)
    (path,) = sorted((tmp_path / "ring").glob("t-*.pfw.gz"))
    return path


def test_flight_recorder_windows(modules, tmp_path):
    assert RING_PROG, "run through ctest (DFTRACE_RING_PROG names ring_prog)"
    path = ring_trace(tmp_path)
    stat = json.loads(subprocess.run([CLI, "stat", "--json", str(path)], capture_output=True,
                                     text=True, timeout=120, check=True).stdout)
    (t,) = stat["triggers"]
    assert t["source"] == "slow_step" and t["reason"].startswith("step 6 lasted "), t
    r = analyze_json([path])
    page = report(tmp_path, "ring", path)
    res = render(modules, page, tmp_path / "ring.png")
    assert res["requests"] == [] and res["errors"] == []
    s = sections(res)
    assert s["windows"]["svgs"] == 1
    windows, split = s["windows"]["cells"]

    # the window and its trigger, as `dftrace stat` lists them (epoch us)
    items = r["steps"]["items"]
    us = 1000
    inside = [i for i in items
              if i["ts_ns"] < t["to"] * us and i["ts_ns"] + i["dur_ns"] > t["from"] * us]
    assert body(windows) == [["1", "pid %d" % t["pid"], "slow_step", t["reason"],
                              str(t["time"]), str(t["from"]), str(t["to"]), t["after"],
                              str(len(inside))]]

    # the slow step beside the median of the other captured steps, each split as the analysis
    # splits it, with the part that bound it
    parts = ("compute", "comm", "io", "data", "other")

    def cells(it, label, step):
        v = [it[p + "_ns"] for p in parts]
        return ["1", label, step, ms(it["dur_ns"])] + [ms(x) for x in v] + [
            parts[v.index(max(v))]]
    (slow,) = [i for i in items if i["step"] == 6]
    rest = sorted((i for i in items if i["step"] != 6), key=lambda i: (i["dur_ns"], i["ts_ns"]))
    median = rest[(len(rest) - 1) // 2]
    summed = {k: sum(i[k] for i in inside) for k in ["dur_ns"] + [p + "_ns" for p in parts]}
    assert body(split) == [cells(slow, "trigger step", "6"),
                           cells(summed, "window's %d step(s)" % len(inside), "-"),
                           cells(median, "median step", str(median["step"]))]
    assert slow["dur_ns"] > 3 * median["dur_ns"]  # the step that fired the trigger
