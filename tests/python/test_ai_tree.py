"""test_ai_tree.py: the Python face's built-in tree and enums are the one table
(include/dftrace/ai_tree.def): same names, categories, paths and order, nothing more."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import textwrap

TABLE_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "include",
                          "dftrace", "ai_tree.def")


def read_table() -> list:
    """The table as the header writes it: [(category, enum name, [event, ...]), ...]."""
    text = open(TABLE_FILE).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)  # the comments name the macros too
    table = []
    for kind, a, b in re.findall(r"^\s*DFTRACE_AI_(CATEGORY|EVENT)\((\w+), (\w+)\)", text, re.M):
        if kind == "CATEGORY":
            table.append((a, b, []))
        else:
            assert table and table[-1][0] == a, f"event {b} outside its category {a}"
            table[-1][2].append(b)
    assert table, f"no category found in {TABLE_FILE}"
    return table


def run(code: str) -> str:
    """Runs code in a fresh interpreter (tracing off: the tree needs no trace file)."""
    env = dict(os.environ, DFTRACE_ENABLE="0")
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_extension_exposes_the_table():
    got = run("""
        from dftrace import _dftrace
        print(repr(_dftrace.AI_TREE))
    """)
    want = tuple((c, e, tuple(ev)) for c, e, ev in read_table())
    assert ast.literal_eval(got) == want


def test_ai_is_the_table():
    # Every node as the face shows it, in the face's order, read from the core's nodes.
    got = run("""
        from dftrace import ai
        print(ai.name, ai.cat, repr(ai.path))
        for cat, node in ai._children.items():
            print("C", cat, node.name, node.cat, node.path, getattr(ai, cat) is node)
            for attr, child in node._children.items():
                print("E", attr, child.name, child.cat, child.path, getattr(node, attr) is child)
    """).splitlines()
    want = ["ai_root ai_root ''"]
    for cat, _, events in read_table():
        want.append(f"C {cat} {cat} {cat} {cat} True")
        want += [f"E {e} {e} {cat} {cat}.{e} True" for e in events]
    assert got == want


def test_enums_are_the_table():
    got = run("""
        import dftrace
        print(" ".join(f"{m.name}={m.value}" for m in dftrace.ProfileCategory))
        for name in dftrace._tree.EVENT_ENUMS.values():
            e = getattr(dftrace, name.__name__)
            assert e is name and e.__name__ in dftrace.__all__, e.__name__
            print(e.__name__, " ".join(f"{m.name}={m.value}" for m in e))
    """).splitlines()
    table = read_table()
    want = [" ".join(f"{c.upper()}={c}" for c, _, _ in table)]
    want += [name + " " + " ".join(f"{e.upper()}={e}" for e in events) for _, name, events in table]
    assert got == want
