#!/usr/bin/env python3
"""run_pytest.py: runs pytest for CTest so that a skip can not hide inside a passing test.

Usage: run_pytest.py [pytest arguments...]   (run with the interpreter that has pytest)

Every skipped case (pytest.skip, skipif, a module skipped at import, an expected failure)
prints one 'SKIPPED: <test id>: <reason>' line. When nothing failed but something was skipped,
the exit status is 77, which the test's SKIP_RETURN_CODE turns into "Skipped" in ctest's
report; tests/cmake/report_skips.py then prints the reasons after ctest's summary. Failures keep
pytest's own status, skips or not."""
import sys

import pytest

SKIP_STATUS = 77


class SkipRecorder:
    """A pytest plugin that collects (test id, reason) for every skipped test or module."""

    def __init__(self):
        self.skips = []

    def _record(self, report):
        if hasattr(report, "wasxfail"):
            self.skips.append((report.nodeid, "expected failure: " + str(report.wasxfail)))
            return
        reason = report.longrepr
        if isinstance(reason, tuple) and len(reason) == 3:
            reason = reason[2]
        reason = str(reason)
        if reason.startswith("Skipped: "):
            reason = reason[len("Skipped: "):]
        self.skips.append((report.nodeid, reason))

    def pytest_runtest_logreport(self, report):
        if report.skipped:
            self._record(report)

    def pytest_collectreport(self, report):
        if report.skipped:
            self._record(report)


def main():
    recorder = SkipRecorder()
    status = int(pytest.main(sys.argv[1:], plugins=[recorder]))
    for test, reason in recorder.skips:
        print(f"SKIPPED: {test}: {reason}")
    sys.stdout.flush()
    if status == 0 and recorder.skips:
        return SKIP_STATUS
    return status


if __name__ == "__main__":
    sys.exit(main())
