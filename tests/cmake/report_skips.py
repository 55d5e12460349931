#!/usr/bin/env python3
"""report_skips.py: after ctest's summary (CTEST_CUSTOM_POST_TEST), says why each test that
did not fail was skipped, from the reasons the tests printed into Testing/Temporary/LastTest.log.

A skipping test prints its reason as a line 'SKIPPED: <reason>' (tests/cmake/run_pytest.py,
the integration scripts that exit 77); GoogleTest's GTEST_SKIP() prints '<file>:<line>: Skipped'
followed by the message. Usage: report_skips.py BUILD_DIR"""
import os
import re
import sys

START = re.compile(r"^\d+/\d+ Testing: (.+)$")


def blocks(log):
    """(test name, output lines, failed) for each test in the log."""
    name, out, failed, in_output = None, [], False, False
    for line in log:
        m = START.match(line)
        if m:
            if name:
                yield name, out, failed
            name, out, failed, in_output = m.group(1), [], False, False
            continue
        if line.startswith("Output:"):
            in_output = True
            continue
        if line == "<end of output>":
            in_output = False
            continue
        if in_output:
            if not out and line.startswith("-----"):
                continue  # the ruler under "Output:"
            out.append(line)
        elif line.startswith("Test Failed") or line.startswith("Test Fail"):
            failed = True
    if name:
        yield name, out, failed


def reasons(out):
    found = []
    for i, line in enumerate(out):
        if line.startswith("SKIPPED: "):
            found.append(line[len("SKIPPED: "):])
        elif line.endswith(": Skipped"):  # GoogleTest: the message follows, up to [  SKIPPED ]
            msg = []
            for nxt in out[i + 1:]:
                if nxt.startswith("[  SKIPPED ]") or nxt.startswith("[ "):
                    break
                if nxt.strip():
                    msg.append(nxt.strip())
            found.append(" ".join(msg) or "(GTEST_SKIP without a message)")
    return found


def main():
    # While ctest runs (and its post-test command with it) the log is LastTest.log.tmp; it
    # becomes LastTest.log when ctest ends.
    base = os.path.join(sys.argv[1], "Testing", "Temporary", "LastTest.log")
    # (A .tmp left behind by an interrupted run is older than the last complete log.)
    found = [p for p in (base + ".tmp", base) if os.path.exists(p)]
    if not found:
        return 0
    with open(max(found, key=os.path.getmtime), errors="replace") as f:
        log = f.read().splitlines()
    lines = []
    for name, out, failed in blocks(log):
        if failed:
            continue
        for r in reasons(out):
            lines.append(f"  {name}: {r}")
    if lines:
        print("Why tests were skipped (from their output):")
        print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
