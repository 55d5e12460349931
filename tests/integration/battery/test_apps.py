"""test_apps.py: every program of apps.py (the compact table of everyday programs), untraced and
traced, with every difference listed (battery.py). BATTERY_CASES=name,name runs only those;
BATTERY_CALIBRATE=1 runs each case untraced twice (to find what varies in the case itself)."""

import os

import pytest

from battery import check_case, selected
from apps import APPS

SELECTED = selected(APPS)


@pytest.mark.parametrize("case", SELECTED, ids=[c.name for c in SELECTED])
def test_program(case, tmp_path_factory):
    check_case(case, tmp_path_factory)


def test_runs_start_with_default_signals(tmp_path):
    """A program of the table starts with the default action of SIGINT, SIGQUIT, SIGHUP, ... and
    nothing blocked, whatever the runner inherited: ctest started by `ctest &` from a script
    ignores SIGINT and SIGQUIT (and nohup SIGHUP), and the Ctrl-C cases would hang."""
    import signal
    from battery import Case, RESET_SIGNALS, execute
    saved = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP)}
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR1, signal.SIGTERM})
    try:
        for s in saved:
            signal.signal(s, signal.SIG_IGN)
        status, out, err, problems = execute(["grep", "-E", "^Sig(Ign|Blk):", "/proc/self/status"],
                                             str(tmp_path), dict(os.environ), Case("signals", ""),
                                             str(tmp_path))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        for s, h in saved.items():
            signal.signal(s, h)
    masks = dict(line.split(":") for line in out.split("\n") if line)
    assert status == 0 and not problems, (status, out, err, problems)
    ignored, blocked = int(masks["SigIgn"], 16), int(masks["SigBlk"], 16)
    assert blocked == 0, "blocked in the program: %#x" % blocked
    left = [signal.Signals(s).name for s in RESET_SIGNALS if ignored & (1 << (s - 1))]
    assert not left, "ignored in the program: %s" % left
