#!/usr/bin/env python3
"""check_fortran_threads.py: runs fortran_threads and checks per-thread nesting of its Fortran regions (gzip + json).

Usage: check_fortran_threads.py <fortran_threads executable> <work dir>
"""
import gzip
import json
import subprocess
import sys

from fortran_check import fresh_trace, program_env, report

THREADS, ITERS = 4, 50


def main():
    exe, work = sys.argv[1], sys.argv[2]
    out = fresh_trace(work, "threads.pfw.gz")
    env = program_env("OMP_")
    p = subprocess.run([exe, out], capture_output=True, text=True, timeout=120, env=env)
    fails = []
    if p.returncode != 0 or p.stderr.strip():
        return [f"exit {p.returncode}, stderr {p.stderr!r}"]
    with gzip.open(out, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    if lines[0] != "[" or lines[-1] != "]":
        fails.append("not '[' ... ']'")
    objs = [json.loads(l) for l in lines[1:-1]]
    sweeps = [o for o in objs if o.get("ph") == "X" and o["name"] == "sweep"]
    cells = [o for o in objs if o.get("ph") == "X" and o["name"] == "cell"]
    by_id = {o["id"]: o for o in sweeps}
    if len(sweeps) != THREADS * ITERS or len(cells) != THREADS * ITERS:
        fails.append(f"{len(sweeps)} sweep and {len(cells)} cell events, want {THREADS * ITERS} each")
    if any(o["cat"] != "solver" for o in sweeps + cells):
        fails.append("events outside category solver")
    tids = {o["tid"] for o in sweeps}
    if len(tids) != THREADS:
        fails.append(f"sweep events on {len(tids)} threads, want {THREADS}")
    per_thread = {}
    for o in sweeps:
        a = o["args"]
        if a["level"] != 1 or a["p_idx"] != -1:
            fails.append(f"sweep {o['id']}: level {a['level']} p_idx {a['p_idx']}, want 1 and -1")
        per_thread.setdefault((o["tid"], a["thread"]), []).append(a["i"])
    if len(per_thread) != THREADS:
        fails.append(f"(tid, thread) pairs {sorted(per_thread)}: a thread number on two tids or the reverse")
    for key, its in per_thread.items():
        if sorted(its) != list(range(1, ITERS + 1)):
            fails.append(f"thread {key}: iterations {sorted(its)[:5]}...")
    children = {}
    for c in cells:
        a = c["args"]
        parent = by_id.get(a["p_idx"])
        if parent is None:
            fails.append(f"cell {c['id']}: p_idx {a['p_idx']} is no sweep event")
            continue
        children[parent["id"]] = children.get(parent["id"], 0) + 1
        if parent["tid"] != c["tid"] or parent["args"]["thread"] != a["thread"]:
            fails.append(f"cell {c['id']} (tid {c['tid']}) nested in sweep {parent['id']} of tid {parent['tid']}")
        if a["level"] != 2:
            fails.append(f"cell {c['id']}: level {a['level']}, want 2")
    if any(n != 1 for n in children.values()) or len(children) != len(sweeps):
        fails.append("not exactly one cell per sweep")
    names = {}
    for o in objs:
        if o.get("ph") == "M" and o["name"] == "thread_name":
            names.setdefault(o["tid"], set()).add(o["args"]["name"])
    for t in tids:
        if "worker" not in names.get(t, set()):
            fails.append(f"tid {t}: no thread_name 'worker' (got {names.get(t)})")
    return fails


if __name__ == "__main__":
    report(main, "fortran threads")
