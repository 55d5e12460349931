#!/usr/bin/env python3
"""check_mixed_trace.py: runs a driver of the mixed example (Python or C) and checks the one trace it writes.

Usage: check_mixed_trace.py --work DIR --epochs E --steps S --layers L --width W
                            [--pythonpath P] -- COMMAND...

The driver runs with DFTRACE_ENABLE=1 and DFTRACE_LOG_FILE=DIR/trace (and PYTHONPATH=P first
when given). Checks, from docs/ai-tree.md and docs/format.md:
  - the process wrote exactly one trace file, and every event in it has one pid and one tid;
  - for each of forward/backward/step: the driver's event (cat compute) encloses one C++ event
    per layer ("<n>.layer" / "step.update", arg layer = 0..L-1), each of which encloses exactly
    one Fortran event ("forward.matvec", "backward.matvec_t", "step.axpy"): p_idx is the
    enclosing event's id, level rises by one per language, and the times nest;
  - the driver's event is inside fetch.block < epoch.block < train (the loops of the driver);
  - step and epoch set by the driver's update (ai.update(step=..., epoch=...)) appear on the
    C++ and Fortran events with the driver event's values, which run 0, 1, 2, ... step after step;
  - with --stat-tool: `dftrace stat` lists the three languages' events in category compute, each
    with its count.
"""
import argparse
import glob
import gzip
import json
import os
import shutil
import subprocess
import sys

CHAINS = [
    ("forward", "forward.layer", "forward.matvec"),
    ("backward", "backward.layer", "backward.matvec_t"),
    ("step", "step.update", "step.axpy"),
]

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def run_driver(opts, command):
    shutil.rmtree(opts.work, ignore_errors=True)
    os.makedirs(opts.work)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    env["DFTRACE_ENABLE"] = "1"
    env["DFTRACE_LOG_FILE"] = os.path.join(opts.work, "trace")
    if opts.pythonpath:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [opts.pythonpath, env.get("PYTHONPATH")]))
    p = subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)
    check(p.returncode == 0, f"driver exit code {p.returncode}\nstdout: {p.stdout}\nstderr: {p.stderr}")
    check("dftrace:" not in p.stderr, f"driver printed dftrace diagnostics: {p.stderr}")
    return p


def load(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        lines = f.read().splitlines()
    check(lines and lines[0] == "[" and lines[-1] == "]", f"{path}: not '[' ... ']'")
    return [json.loads(l) for l in lines[1:-1]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--epochs", type=int, required=True)
    ap.add_argument("--steps", type=int, required=True)
    ap.add_argument("--layers", type=int, required=True)
    ap.add_argument("--width", type=int, required=True)
    ap.add_argument("--pythonpath")
    ap.add_argument("--stat-tool", help="the dftrace command: also check what `dftrace stat` shows")
    ap.add_argument("command", nargs="+")
    opts = ap.parse_args()
    E, S, L, W = opts.epochs, opts.steps, opts.layers, opts.width

    run_driver(opts, opts.command)
    if failures:
        return
    files = sorted(glob.glob(os.path.join(opts.work, "*.pfw.gz")))
    if not check(len(files) == 1, f"expected one trace file for the one process, got {files}"):
        return
    objs = load(files[0])
    events = [o for o in objs if o.get("ph") == "X" and o.get("cat") != "dftracer"]
    by_id = {o["id"]: o for o in events}
    check(len(by_id) == len(events), "duplicate event ids")
    check(len({(o["pid"], o["tid"]) for o in events}) == 1, "events from more than one pid/tid")

    def parent(o):
        return by_id.get(o["args"].get("p_idx"))

    def nested(child, par, what):
        a = child["args"]
        ok = check(par is not None, f"{what}: p_idx {a.get('p_idx')} names no event")
        if ok:
            check(a.get("level") == par["args"].get("level") + 1,
                  f"{what}: level {a.get('level')} under level {par['args'].get('level')}")
            check(par["ts"] <= child["ts"] and child["ts"] + child["dur"] <= par["ts"] + par["dur"],
                  f"{what}: not inside its parent in time")
        return ok

    for top_name, mid_name, leaf_name in CHAINS:
        tops = sorted((o for o in events if o["name"] == top_name and o["cat"] == "compute"),
                      key=lambda o: o["ts"])
        mids = [o for o in events if o["name"] == mid_name]
        leaves = [o for o in events if o["name"] == leaf_name]
        check(len(tops) == E * S, f"{top_name}: {len(tops)} driver events, want {E * S}")
        check(len(mids) == E * S * L, f"{mid_name}: {len(mids)} C++ events, want {E * S * L}")
        check(len(leaves) == E * S * L, f"{leaf_name}: {len(leaves)} Fortran events, want {E * S * L}")
        check(all(o["cat"] == "compute" for o in mids + leaves), f"{mid_name}/{leaf_name}: not all in compute")

        leaves_of = {}
        for leaf in leaves:
            mid = parent(leaf)
            if not nested(leaf, mid, f"Fortran {leaf_name} {leaf['id']}"):
                continue
            check(mid["name"] == mid_name, f"Fortran {leaf_name} inside {mid['name']}, want {mid_name}")
            leaves_of.setdefault(mid["id"], []).append(leaf)
            for key in ("step", "epoch"):
                check(leaf["args"].get(key) == mid["args"].get(key),
                      f"{leaf_name} {key}={leaf['args'].get(key)} but C++ {mid_name} {key}={mid['args'].get(key)}")
            la = leaf["args"]
            if leaf_name == "step.axpy":
                check(la.get("n") == W * W and isinstance(la.get("alpha"), float) and la["alpha"] < 0,
                      f"step.axpy per-use args {la}")
            else:
                check(la.get("rows") == W and la.get("cols") == W, f"{leaf_name} per-use args {la}")

        mids_of = {}
        for mid in mids:
            check(len(leaves_of.get(mid["id"], [])) == 1,
                  f"C++ {mid_name} {mid['id']} encloses {len(leaves_of.get(mid['id'], []))} Fortran events")
            top = parent(mid)
            if not nested(mid, top, f"C++ {mid_name} {mid['id']}"):
                continue
            check(top["name"] == top_name and top["cat"] == "compute",
                  f"C++ {mid_name} inside {top['name']}/{top['cat']}, want {top_name}/compute")
            mids_of.setdefault(top["id"], []).append(mid)
            for key in ("step", "epoch"):
                check(mid["args"].get(key) == top["args"].get(key),
                      f"{mid_name} {key}={mid['args'].get(key)} but driver {top_name} {key}={top['args'].get(key)}")

        for i, top in enumerate(tops):
            layers = sorted(m["args"].get("layer") for m in mids_of.get(top["id"], []))
            check(layers == list(range(L)), f"driver {top_name} #{i}: C++ layers {layers}")
            # The driver's update: step i, epoch i // S, on this event and so on everything inside.
            check(top["args"].get("step") == i and top["args"].get("epoch") == i // S,
                  f"driver {top_name} #{i}: step={top['args'].get('step')} epoch={top['args'].get('epoch')},"
                  f" want step={i} epoch={i // S}")
            # The driver's loops: fetch.block < epoch.block < train.
            chain = []
            p = parent(top)
            while p is not None:
                chain.append(p["name"])
                p = parent(p)
            check(chain == ["fetch.block", "epoch.block", "train"],
                  f"driver {top_name} #{i}: enclosing events {chain}, want fetch.block, epoch.block, train")
            check(top["args"].get("level") == 4, f"driver {top_name} #{i}: level {top['args'].get('level')}")

    if opts.stat_tool:
        check_stat(opts.stat_tool, files[0], E * S, L)


def check_stat(tool, trace, driver_events, layers):
    """`dftrace stat` rows: category, name, count first; one per event name of each language."""
    p = subprocess.run([tool, "stat", trace], capture_output=True, text=True, timeout=120)
    if not check(p.returncode == 0, f"dftrace stat: exit {p.returncode}: {p.stderr}"):
        return
    rows = {}
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) >= 3 and f[2].isdigit():
            rows[(f[0], f[1])] = int(f[2])
    for chain in CHAINS:
        for name, count in zip(chain, (driver_events, driver_events * layers, driver_events * layers)):
            check(rows.get(("compute", name)) == count,
                  f"dftrace stat: compute/{name} count {rows.get(('compute', name))}, want {count}\n{p.stdout}")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a reader crash is a failure, reported as one
        failures.append(f"checker error: {type(e).__name__}: {e}")
    for f in failures[:40]:
        print("FAIL:", f)
    if len(failures) > 40:
        print(f"... and {len(failures) - 40} more failures")
    if failures:
        sys.exit(1)
    print("mixed trace: all checks passed")
