#!/usr/bin/env python3
"""check_fortran_ai_tree.py: the Fortran face sees the built-in tree of the one table.

Usage: check_fortran_ai_tree.py <fortran_ai_tree executable>

The Fortran module holds no copy of the tree (it reaches nodes by path through the C ABI): this
checks that every category and event of include/dftrace/ai_tree.def is there with the table's
event name (not prefixed), category and path, and that 'ai' is the root.
"""
import os
import re
import subprocess
import sys

TABLE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "include",
                          "dftrace", "ai_tree.def")


def read_table():
    text = re.sub(r"/\*.*?\*/", "", open(TABLE_FILE).read(), flags=re.S)
    table = []
    for kind, a, b in re.findall(r"^\s*DFTRACE_AI_(CATEGORY|EVENT)\((\w+), (\w+)\)", text, re.M):
        if kind == "CATEGORY":
            table.append((a, []))
        else:
            table[-1][1].append(b)
    return table


def main():
    table = read_table()
    if not table:
        sys.exit(f"no category found in {TABLE_FILE}")
    want = ["ai ai_root ai_root "]
    for cat, events in table:
        want.append(f"{cat} {cat} {cat} {cat}")
        want += [f"{cat}.{e} {e} {cat} {cat}.{e}" for e in events]
    paths = "".join(line.split(" ")[0] + "\n" for line in want)
    env = dict(os.environ, DFTRACE_ENABLE="0")
    out = subprocess.run([sys.argv[1]], input=paths, capture_output=True, text=True, env=env,
                         timeout=60)
    if out.returncode != 0:
        sys.exit(f"fortran_ai_tree failed ({out.returncode}): {out.stderr}")
    got = [line.rstrip() for line in out.stdout.splitlines()]
    want = [line.rstrip() for line in want]
    bad = [f"  want {w!r}, got {g!r}" for w, g in zip(want, got) if w != g]
    if len(got) != len(want):
        bad.append(f"  {len(want)} lines wanted, {len(got)} printed")
    if bad:
        sys.exit("the Fortran face differs from include/dftrace/ai_tree.def:\n" + "\n".join(bad))
    print(f"ok: {len(want)} nodes as the table gives them")


if __name__ == "__main__":
    main()
