"""fortran_check.py: what the Fortran integration checkers share: a fresh trace path, the
environment a traced program runs in, and one way to report failures."""
import os
import sys


def fresh_trace(work, name):
    """The path of trace `name` in `work` (created), with no file left there by an earlier run."""
    os.makedirs(work, exist_ok=True)
    path = os.path.join(work, name)
    if os.path.exists(path):
        os.remove(path)
    return path


def program_env(*also_drop):
    """The caller's environment without DFTRACE_*/DFTRACER_* (and the prefixes in also_drop):
    the program decides itself whether and where to trace."""
    drop = ("DFTRACE_", "DFTRACER_", *also_drop)
    return {k: v for k, v in os.environ.items() if not k.startswith(drop)}


def report(main, what):
    """Runs main() (which returns the list of failures), prints them and exits 1, or prints
    '<what>: all checks passed'. A crash of the checker is a failure, reported as one."""
    try:
        failures = main()
    except Exception as e:
        detail = getattr(e, "stderr", "") or ""
        failures = [f"checker error: {type(e).__name__}: {e} {detail}".rstrip()]
    for f in failures[:40]:
        print("FAIL:", f)
    if failures:
        sys.exit(1)
    print(f"{what}: all checks passed")
