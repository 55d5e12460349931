#!/usr/bin/env python3
"""check_fortran_trace.py: runs fortran_trace and checks its trace line by line with gzip + json.

Usage: check_fortran_trace.py <fortran_trace executable> <work dir>

Expectations come from docs/format.md and docs/ai-tree.md, not from an earlier run: names and
categories of the tree, argument inheritance and order, nesting, forced and disabled uses,
counters, instants, metadata lines, the header and footer. Events of one thread are written in
the order they end, so the event lines are checked in sequence; metadata lines (M) may be
written apart from the thread's events, so they are checked as a sequence of their own.
"""
import gzip
import json
import os
import subprocess
import sys

from fortran_check import fresh_trace, program_env, report

HOST_HASH_VM = 7386335834152862147  # docs/format.md's check value of hash("vm")
X_KEYS = ["id", "name", "cat", "pid", "tid", "ts", "dur", "ph", "args"]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def run(exe, out, mode):
    # The program decides itself whether and where to trace; the caller's environment may not.
    env = program_env()
    p = subprocess.run([exe, out, mode], capture_output=True, text=True, timeout=120, env=env)
    return p.returncode, p.stdout, p.stderr


def check_stderr(stderr, mode):
    lines = [l for l in stderr.splitlines() if l.strip()]
    check(len(lines) == 2, f"{mode}: expected exactly 2 stderr lines, got {lines!r}")
    check(all(l.startswith("dftrace: ") for l in lines), f"{mode}: stderr lines without 'dftrace: ': {lines!r}")
    check(any("'bad..path'" in l for l in lines), f"{mode}: no diagnostic for the bad path: {lines!r}")
    check(any("'complex'" in l for l in lines), f"{mode}: no diagnostic for the complex value: {lines!r}")


def read_lines(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        text = f.read()
    check(text.endswith("]\n") or text.endswith("]"), "trace does not end with ']'")
    return text.splitlines()


def args_of(ev):
    return ev.get("args", {})


def user_args(ev):
    """The args without the ones the core writes itself."""
    return {k: v for k, v in args_of(ev).items() if k not in ("hhash", "level", "p_idx")}


def main():
    exe, work = sys.argv[1], sys.argv[2]

    # ------------------------------------------------------------ tracing off: harmless
    off_out = fresh_trace(work, "off.pfw.gz")
    rc, stdout, stderr = run(exe, off_out, "off")
    check(rc == 0, f"off: exit code {rc}; stdout {stdout!r} stderr {stderr!r}")
    check(not os.path.exists(off_out), "off: a trace file was written while tracing was disabled")
    check_stderr(stderr, "off")

    # ------------------------------------------------------------ tracing on
    out = fresh_trace(work, "fortran.pfw.gz")
    rc, stdout, stderr = run(exe, out, "on")
    if not check(rc == 0, f"on: exit code {rc}; stdout {stdout!r} stderr {stderr!r}"):
        return
    check_stderr(stderr, "on")
    written = [int(l.split("=", 1)[1]) for l in stdout.splitlines() if l.startswith("events_written=")]
    check(len(written) == 1, f"on: no events_written line in {stdout!r}")

    lines = read_lines(out)
    check(lines[0] == "[", f"line 1 is {lines[0]!r}, not '['")
    check(lines[-1] == "]", f"last line is {lines[-1]!r}, not ']'")
    objs = []
    for n, line in enumerate(lines[1:-1], start=2):
        check(line == line.strip() and line, f"line {n}: whitespace around or empty: {line!r}")
        try:
            objs.append(json.loads(line))
        except ValueError as e:
            failures.append(f"line {n}: not JSON ({e}): {line!r}")
            return

    # Header: HH, SH (command line), SH (exec name), the PR lines known at start (time_metric,
    # hostname, exec, then whatever the build adds: topology when hwloc is present),
    # process_name, start.
    start_at = next(i for i, o in enumerate(objs) if o["name"] == "start")
    head = objs[:start_at + 1]
    names = [o["name"] for o in head]
    check(names[:5] == ["HH", "SH", "SH", "PR", "PR"] and names[-2:] == ["process_name", "start"]
          and set(names[5:-2]) <= {"PR"}, f"header names {names}")
    check(head[2]["args"]["name"] == "fortran_trace", f"exec name from dftrace_init: {head[2]}")
    check(head[3]["args"] == {"name": "time_metric", "value": "us"}, f"PR time_metric line: {head[3]}")
    check(head[5]["args"] == {"hhash": head[0]["args"]["value"], "name": "exec", "value": "fortran_trace"},
          f"PR exec line: {head[5]}")
    pid = head[0]["pid"]
    check(all(o["pid"] == pid for o in objs), "more than one pid in the file")

    ids = [o["id"] for o in objs if "id" in o]
    check(len(ids) == len(set(ids)), "duplicate ids")

    body = objs[start_at + 1:]
    meta = [o for o in body if o["ph"] == "M" and o["name"] != "thread_name"]
    events = [o for o in body if o["ph"] != "M"]
    for o in events:
        if o["ph"] == "X":
            check(list(o.keys()) == X_KEYS, f"X event key order {list(o.keys())}")

    # ------------------------------------------------------------ metadata lines, in call order
    want_meta = [
        ("SH", "vm", HOST_HASH_VM),
        ("CM", "solver", "jacobi"),
        ("PR", "mesh", "64x64"),
        ("PR", "ranks_per_node", 4),
        ("CM", "epoch.start", None),
        ("CM", "epoch.end", None),
    ]
    got_meta = [(o["name"], o["args"].get("name"), o["args"].get("value")) for o in meta]
    check(len(got_meta) == len(want_meta), f"metadata lines {got_meta}")
    for (gt, gn, gv), (wt, wn, wv) in zip(got_meta, want_meta):
        check((gt, gn) == (wt, wn), f"metadata line {(gt, gn, gv)}, want {(wt, wn, wv)}")
        if wv is None:
            check(isinstance(gv, str) and gv.isdigit(), f"{wn}: value {gv!r} is not a time string")
        else:
            check(gv == wv and type(gv) is type(wv), f"{wn}: value {gv!r}, want {wv!r}")
    marks = [int(v) for (_, n, v) in got_meta if n in ("epoch.start", "epoch.end")]
    check(len(marks) == 2 and marks[0] <= marks[1], f"epoch.start/end times {marks}")

    # ------------------------------------------------------------ events, in the order they end
    E = {"epoch": 2, "step": 8}
    want = [
        # (ph, name, cat, user args in order, level, index of the parent in this table or None)
        ("X", "jacobi", "solver", {"epoch": 2, "lr": 0.5}, 3, 1),
        ("X", "forward", "compute",
         {"epoch": 2, "lr": 0.5, "phase": "train", "warm": True, "layer": 3, "flops": 1234567890123,
          "scale": 0.25, "half": 1.5, "name": 'conv "1" \\ end', "bias": False, "padded": "x  ",
          "k" * 200: "v" * 300}, 2, 15),
        ("X", "backward", "compute", {"epoch": 2, "lr": 0.5, "phase": "train", "step": 8}, 2, 15),
        ("X", "preprocess.collate", "data", E, 2, 15),
        ("X", "forward", "compute", {"epoch": 2, "phase": "train", "warm": True, "step": 8}, 2, 15),
        ("C", "compute", "compute", {"residual": 0.125}, None, None),
        ("C", "jacobi", "solver", {"iters": 42}, None, None),
        ("C", "solver", "solver", {"bytes": 4096}, None, None),
        ("i", "capture", "checkpoint", E, 2, 15),  # instants carry their node's arguments too
        ("X", "fetch.iter", "dataloader", {**E, "count": 1}, 2, 15),
        ("X", "item", "data", {**E, "item": 1}, 3, 11),
        ("X", "fetch.block", "dataloader", {**E, "count": 1}, 2, 15),
        ("X", "fetch.iter", "dataloader", {**E, "count": 2}, 2, 15),
        ("X", "item", "data", {**E, "item": 2}, 3, 14),
        ("X", "fetch.block", "dataloader", {**E, "count": 2}, 2, 15),
        ("X", "train", "pipeline", E, 1, None),
        ("X", "end", "dftracer", None, 1, None),
    ]
    got = [(o["ph"], o["name"], o["cat"]) for o in events]
    check(got == [w[:3] for w in want], f"event sequence\n  got  {got}\n  want {[w[:3] for w in want]}")
    if got != [w[:3] for w in want]:
        return
    for o, (ph, name, cat, uargs, level, parent) in zip(events, want):
        if uargs is not None:
            ua = user_args(o)
            check(list(ua.items()) == list(uargs.items()),
                  f"{name}: args {ua}, want {uargs} (in this order)")
            for k, v in uargs.items():
                check(type(ua.get(k)) is type(v), f"{name}: {k} has type {type(ua.get(k)).__name__}")
        if ph == "C":
            check("id" not in o and "dur" not in o, f"counter line with id or dur: {o}")
            continue
        a = args_of(o)
        check(a.get("hhash") == HOST_HASH_VM or a.get("hhash") == objs[0]["args"]["value"],
              f"{name}: hhash {a.get('hhash')}")
        check(list(a.keys())[0] == "hhash" and list(a.keys())[-2:] == ["level", "p_idx"],
              f"{name}: hhash first, level and p_idx last: {list(a.keys())}")
        check(a["level"] == level, f"{name}: level {a['level']}, want {level}")
        if ph == "i":
            check(o.get("s") == "t", f"instant without s=t: {o}")
        if name == "end":
            continue
        if parent is None:
            check(a["p_idx"] == -1, f"{name}: p_idx {a['p_idx']}, want -1")
        else:
            pev = events[parent]
            check(a["p_idx"] == pev["id"], f"{name}: p_idx {a['p_idx']}, want {pev['name']}'s id {pev['id']}")
            if ph == "X":
                check(pev["ts"] <= o["ts"] and o["ts"] + o["dur"] <= pev["ts"] + pev["dur"],
                      f"{name} is not inside {pev['name']} in time")
    user_events = len(want) - 1
    end = events[-1]["args"]
    check(end.get("num_events") == user_events,
          f"end: num_events {end.get('num_events')}, want {user_events} user events")
    check(end.get("dropped_events") == 0, f"end: dropped_events {end.get('dropped_events')}")
    check(written == [end.get("num_events")],
          f"dftrace_events_written() said {written}, the end event {end.get('num_events')}")
    check(not any("complex" in args_of(o) for o in objs), "the complex value was written")


if __name__ == "__main__":
    report(lambda: main() or failures, "fortran trace")
