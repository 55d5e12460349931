"""test_apps.py: every program of apps.py (the compact table of everyday programs), untraced and
traced, with every difference listed (battery.py). BATTERY_CASES=name,name runs only those;
BATTERY_CALIBRATE=1 runs each case untraced twice (to find what varies in the case itself)."""
import json
import os
import time

import pytest

from battery import run_case
from apps import APPS

CLI = os.environ.get("DFTRACE_CLI", "")
ONLY = [n for n in os.environ.get("BATTERY_CASES", "").split(",") if n]
CALIBRATE = os.environ.get("BATTERY_CALIBRATE") == "1"
SELECTED = [c for c in APPS if not ONLY or c.name in ONLY]


@pytest.mark.parametrize("case", SELECTED, ids=[c.name for c in SELECTED])
def test_program(case, tmp_path_factory):
    assert os.access(CLI, os.X_OK), "DFTRACE_CLI (the dftrace tool) is not set to a program"
    root = str(tmp_path_factory.getbasetemp() / case.name)
    t0 = time.monotonic()
    diffs, skip = run_case(case, root, CLI, calibrate=CALIBRATE)
    seconds = round(time.monotonic() - t0, 1)  # for the summary only: nothing is timed
    if skip:
        pytest.skip("%s: %s" % (case.name, skip))
    # One line per case in a summary beside the cases' folders (for the report).
    with open(os.path.join(str(tmp_path_factory.getbasetemp()), "summary.jsonl"), "a") as f:
        f.write(json.dumps({"case": case.name, "defects": case.defects, "differences": diffs,
                            "seconds": seconds}) + "\n")
    assert not diffs, "%s (%s): %d difference(s):\n  - %s" % (
        case.name, case.defects, len(diffs), "\n  - ".join(diffs))
