#!/usr/bin/env python3
"""check_layers.py: fails when an #include in src/, bindings/ or tools/ points up or sideways.

The table LAYERS below is the one statement of which folder may include which; it mirrors the
layer picture in src/README.md. A quoted include is resolved like the compiler does (the
including file's folder, then src/, then include/); an angle include is checked when it names a
file of the project. Every source file of a checked folder must sit in a folder of the table, so
a new folder fails until it is given its place. Tests, benchmarks and examples may include any
layer and are not checked.

Usage: check_layers.py [ROOT]   (ROOT: the repository, default: this script's parent folder).
Before the repository, the checker runs itself on a small tree with one upward include and
fails if it does not report it, so a passing run is never a checker that sees nothing.
Exit status: 0 when every include points down, 1 otherwise.
"""
import os
import re
import sys
import tempfile

# folder -> the folders its files may include, besides their own folder and the public
# headers (include/dftrace, include/dftracer: the C ABI contract, which includes nothing of
# the project). Layers, bottom up: base; the model (config, tree, topology); the writer and,
# beside it, the reader; the runtime; the faces.
LAYERS = {
    # base: what every layer uses
    "src/base": [],
    # the model
    "src/config": ["src/base"],
    "src/tree": ["src/base"],
    "src/topology": ["src/base"],
    # what /proc (and NVML) say about the process and the node: plain structs, no writer
    "src/telemetry": ["src/base"],
    # the writer and the reader, side by side on the base
    "src/writer": ["src/base"],
    "src/reader": ["src/base"],
    # the analysis engine: on the reader (and the configuration's safe file reading)
    "src/analysis": ["src/base", "src/config", "src/reader"],
    # the event path
    "src/runtime": ["src/base", "src/config", "src/tree", "src/topology", "src/telemetry",
                    "src/writer"],
    # the faces
    "bindings/c": ["src/base", "src/config", "src/tree", "src/topology", "src/writer",
                   "src/runtime"],
    "bindings/python": [],
    # dftrace._reader: the Python face of the trace reader (dftrace.read), like the tools
    "bindings/python/reader": ["src/base", "src/reader"],
    "bindings/fortran": [],
    "src/plugins/mpi": [],
    # libdftrace_io (LD_PRELOAD): over the C ABI only, like libdftrace_mpi
    "src/plugins/io": [],
    # libdftrace_cupti links none of the core: it may use header-only base vocabulary only
    # (gpu_kinds.hpp); what it needs at run time comes through the private plugin interface.
    "src/plugins/gpu": ["src/base"],
    "tools": ["src/base", "src/config", "src/reader", "src/analysis"],
    # the public headers
    "include/dftrace": [],
    "include/dftracer": [],
}
PUBLIC = ("include/dftrace", "include/dftracer")
CHECKED_ROOTS = ("src", "bindings", "tools", "include")
SOURCE_EXT = (".c", ".cc", ".cpp", ".h", ".hpp", ".def", ".inc")
INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')
SEARCH = ("src", "include")  # the project's include directories (CMakeLists.txt)


def folder_of(rel):
    """The table folder that holds `rel` (the longest matching entry), or None."""
    best = None
    for f in LAYERS:
        if rel == f or rel.startswith(f + "/"):
            if best is None or len(f) > len(best):
                best = f
    return best


def resolve(root, including, kind, name):
    """The included file relative to root, or None when it is not a file of the project."""
    candidates = []
    if kind == '"':
        candidates.append(os.path.join(os.path.dirname(including), name))
    candidates += [os.path.join(d, name) for d in SEARCH]
    for c in candidates:
        c = os.path.normpath(c)
        if os.path.isfile(os.path.join(root, c)):
            return c
    return None


def check(root):
    """A list of messages, one per include that points up or sideways or per unplaced file."""
    problems = []
    for top in CHECKED_ROOTS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for fn in sorted(filenames):
                if not fn.endswith(SOURCE_EXT):
                    continue
                rel = os.path.relpath(os.path.join(dirpath, fn), root)
                here = folder_of(rel)
                if here is None:
                    problems.append(f"{rel}: its folder has no place in the layer table "
                                    f"(scripts/check_layers.py, src/README.md)")
                    continue
                allowed = set(LAYERS[here]) | {here} | set(PUBLIC)
                with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
                    for lineno, line in enumerate(f, 1):
                        m = INCLUDE_RE.match(line)
                        if not m:
                            continue
                        target = resolve(root, rel, m.group(1), m.group(2))
                        if target is None:
                            continue  # a system or third-party header
                        there = folder_of(target)
                        if there not in allowed:
                            problems.append(
                                f"{rel}:{lineno}: includes {target} ({there or 'no layer'}); "
                                f"{here} may include the public headers and "
                                f"{', '.join(sorted(LAYERS[here])) or 'nothing else of the project'}")
    return problems


def self_check():
    """The checker must report an upward include in a small tree; an error message otherwise."""
    with tempfile.TemporaryDirectory() as tmp:
        def put(rel, text):
            path = os.path.join(tmp, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        put("src/runtime/runtime.hpp", '#include "base/log.hpp"\n')
        put("src/base/log.hpp", "#pragma once\n")
        put("src/base/log.cpp", '#include "base/log.hpp"\n#include "runtime/runtime.hpp"\n')
        found = check(tmp)
        if len(found) != 1 or "src/base/log.cpp:2" not in found[0]:
            return f"self-check: expected one upward include at src/base/log.cpp:2, got {found}"
    return None


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))
    err = self_check()
    if err:
        print(err)
        return 1
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"{len(problems)} include(s) against the layers (table: scripts/check_layers.py)")
        return 1
    print("every include points down the layers")
    return 0


if __name__ == "__main__":
    sys.exit(main())
