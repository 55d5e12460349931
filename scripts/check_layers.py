#!/usr/bin/env python3
"""check_layers.py: fails when an #include in src/, bindings/ or tools/ points up or sideways.

The table LAYERS below is the one statement of which folder may include which; it mirrors the
layer picture in src/README.md. A quoted include is resolved like the compiler does (the
including file's folder, then src/, then include/); an angle include is checked when it names a
file of the project. Every source file of a checked folder must sit in a folder of the table, so
a new folder fails until it is given its place. Tests, benchmarks and examples may include any
layer and are not checked.

Usage: check_layers.py [ROOT]   (ROOT: the repository, default: this script's parent folder).
Before the repository, the checker runs itself on a small tree with an upward include, a public
header that includes the plug-ins' private plugin.h and a plug-in that includes the core, and
fails if it does not report exactly those, so a passing run is never a checker that sees nothing.
Exit status: 0 when every include points down, 1 otherwise.
"""
import os
import re
import sys
import tempfile

# folder -> the folders its files may include, besides their own folder and the public
# headers (include/dftrace, include/dftracer: the C ABI contract, which includes nothing of
# the project). An entry may name one file (plugin.h: not a public header, so only the folders
# that list it may include it). Layers, bottom up: base; the model (config, tree, topology) and
# the output (gzip members compressed in order into a file); the writer and, beside it, the
# reader; the runtime; the faces.
PLUGIN_H = "include/dftrace/plugin.h"
PLUGIN_SIDE = [PLUGIN_H, "src/plugins/common"]
LAYERS = {
    # base: what every layer uses
    "src/base": [],
    # the model
    "src/config": ["src/base"],
    "src/tree": ["src/base"],
    "src/topology": ["src/base"],
    # the output: members compressed on a pool of threads and appended to a file (the writer's
    # and the tools')
    "src/output": ["src/base"],
    # what /proc (and NVML) say about the process and the node: plain structs, no writer
    "src/telemetry": ["src/base"],
    # the writer and the reader, side by side on the base
    "src/writer": ["src/base", "src/output"],
    "src/reader": ["src/base"],
    # the analysis engine: on the reader (and the configuration's safe file reading)
    "src/analysis": ["src/base", "src/config", "src/reader"],
    # the event path
    "src/runtime": ["src/base", "src/config", "src/tree", "src/topology", "src/output",
                    "src/telemetry", "src/writer", PLUGIN_H],
    # the faces
    "bindings/c": ["src/base", "src/config", "src/tree", "src/topology", "src/output",
                   "src/writer", "src/runtime", PLUGIN_H],
    "bindings/python": [],
    # dftrace._reader: the Python face of the trace reader (dftrace.read), like the tools, and
    # of the analysis engine in the same pass (the report)
    # what the C++ extensions share (reading their Python arguments)
    "bindings/python/ext/common": [],
    "bindings/python/ext/reader": ["bindings/python/ext/common", "src/base", "src/reader",
                                   "src/analysis"],
    # dftrace._analysis: the Python face of the analysis engine (dftrace.analyze)
    "bindings/python/ext/analysis": ["bindings/python/ext/common", "src/base", "src/config",
                                     "src/reader", "src/analysis"],
    "bindings/fortran": [],
    # the plug-ins (libdftrace_io, libdftrace_mpi, libdftrace_cupti): over the C ABI only, the
    # public headers and their private contract (plugin.h), and what they share
    "src/plugins/common": [PLUGIN_H],
    "src/plugins/io": PLUGIN_SIDE,
    "src/plugins/mpi": PLUGIN_SIDE,
    "src/plugins/gpu": PLUGIN_SIDE,
    "tools": ["src/base", "src/config", "src/output", "src/reader", "src/analysis"],
    # the public headers, and the plug-ins' private contract beside them (which no public
    # header includes: an application never sees it)
    "include/dftrace": [],
    "include/dftracer": [],
    PLUGIN_H: [],
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
        # The plug-ins: plugin.h and src/plugins/common, never the core; plugin.h never from a
        # public header.
        put("include/dftrace/dftrace.h", "\n")
        put("include/dftrace/plugin.h", '#include "dftrace/dftrace.h"\n')
        put("include/dftrace/dftrace.hpp", '#include "dftrace/plugin.h"\n')
        put("src/plugins/common/call_event.hpp", '#include "dftrace/plugin.h"\n')
        put("src/plugins/gpu/session.cpp", '#include "plugins/common/call_event.hpp"\n'
            '#include "dftrace/plugin.h"\n#include "base/log.hpp"\n')
        found = check(tmp)
        expected = ["include/dftrace/dftrace.hpp:1", "src/base/log.cpp:2",
                    "src/plugins/gpu/session.cpp:3"]
        if len(found) != len(expected) or any(e not in f for e, f in zip(expected, sorted(found))):
            return f"self-check: expected includes against the layers at {expected}, got {found}"
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
