#!/usr/bin/env python3
"""check_fortran_ring.py: runs fortran_ring in ring mode (docs/flight-recorder.md) and checks
that its dftrace_trigger was taken (and a second one within trigger.min_gap was not), and that
the trace holds the trigger line and regions up to the trigger, with the window's regions only.

Usage: check_fortran_ring.py <fortran_ring executable> <work dir>"""
import gzip
import json
import os
import subprocess
import sys

from fortran_check import fresh_trace, program_env, report


def main():
    exe, work = sys.argv[1], sys.argv[2]
    path = fresh_trace(work, "ring.pfw.gz")
    env = program_env()
    env.update(DFTRACE_OUTPUT_FILE=path, DFTRACE_OUTPUT_MODE="ring", DFTRACE_RING_SECONDS="60",
               DFTRACE_RING_AFTER="1ms", DFTRACE_CORE_AFFINITY="0")
    p = subprocess.run([exe], capture_output=True, text=True, timeout=120, env=env)
    failures = []
    if p.returncode != 0 or p.stdout.split() != ["taken", "T", "F"]:
        return ["fortran_ring: exit %d, stdout %r, stderr %r" % (p.returncode, p.stdout, p.stderr)]
    with gzip.open(path, "rt") as f:
        lines = [json.loads(l) for l in f.read().splitlines()[1:-1]]
    triggers = [e for e in lines if e.get("name") == "trigger" and e.get("ph") == "M"]
    if [(t["args"]["name"], t["args"]["value"]) for t in triggers] != [("api", "from Fortran")]:
        failures.append("trigger lines: %r" % triggers)
    got = sorted(e["args"]["i"] for e in lines if e.get("name") == "forward")
    # The window (60 s) holds every region before the trigger; full detail for 1 ms after it,
    # and the regions after the program's second of waiting are in the ring, not the file.
    if got != list(range(1, 301)):
        failures.append("regions written: %r" % got)
    return failures


if __name__ == "__main__":
    report(main, "fortran_ring")
