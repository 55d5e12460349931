"""test_battery.py: every program of cases.py, untraced and traced under `dftrace run`, with
every difference listed (battery.py). BATTERY_CASES=name,name runs only those;
BATTERY_CALIBRATE=1 runs each case untraced twice (to find what varies in the case itself)."""

import pytest

from battery import check_case, selected
from cases import CASES

SELECTED = selected(CASES)


@pytest.mark.parametrize("case", SELECTED, ids=[c.name for c in SELECTED])
def test_program(case, tmp_path_factory):
    check_case(case, tmp_path_factory)
