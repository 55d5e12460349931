"""`dftrace analyze --scheduler ADDR --json TRACES...`: the analysis on a Dask cluster.

The dftrace command runs this module (with the trace files it expanded) when --scheduler is
given: dftrace.analyze(files, client=Client(ADDR)) computes the document on the cluster's
workers, and it is printed as `dftrace analyze --json` prints it. The exit status is the
command's: 2 when part of the input could not be read (unless --allow-damaged), or when the
cluster can not be used (no `distributed` in this Python, no scheduler at ADDR).
"""
import argparse
import sys

_PROG = "dftrace: analyze"


def _fail(msg):
    print("%s: %s" % (_PROG, msg), file=sys.stderr)
    return 2


def _client(address):
    """A distributed.Client connected to `address`, or the one line that says why not."""
    try:
        from distributed import Client
    except ImportError:
        return None, ("--scheduler needs Python's `distributed` package, which %s lacks "
                      "(Debian: apt-get install python3-distributed; or set DFTRACE_PYTHON to "
                      "a Python that has it)" % sys.executable)
    try:
        return Client(address, timeout="30s"), None
    except (OSError, TimeoutError, ValueError) as e:
        return None, "--scheduler %s: can not connect: %s" % (address, e)


def main(argv=None):
    """Runs the analysis on the cluster at --scheduler and prints its JSON document.

    Args:
        argv: the command line after `dftrace analyze` (default: sys.argv[1:]), with
            --scheduler ADDR, the files, and --steps, --layers, --rules, --allow-damaged.

    Returns:
        The exit status: 0, or 2 when part of the input could not be read (unless
        --allow-damaged) or the cluster can not be used.

    Example:
        >>> main(["--scheduler", "tcp://node1:8786", "--json", "traces/t-1.pfw.gz"])
        0
    """
    p = argparse.ArgumentParser(prog="dftrace analyze")
    p.add_argument("--scheduler", required=True)
    p.add_argument("--json", action="store_true")
    p.add_argument("--steps")
    p.add_argument("--layers")
    p.add_argument("--rules")
    p.add_argument("--allow-damaged", action="store_true")
    p.add_argument("files", nargs="+")
    a = p.parse_args(argv)
    client, why = _client(a.scheduler)
    if client is None:
        return _fail(why)
    from . import _analysis
    from ._analyze import _document
    try:
        with client:  # the text as bytes, and inputs.complete: nothing here parses the text
            doc, complete = _document(a.files, client, a.steps, a.layers, a.rules, 0,
                                      _analysis.merge_text)
    except Exception as e:  # a worker's error (no dftrace there, a trace it can not read)
        return _fail("the analysis on %s failed: %s: %s" % (a.scheduler, type(e).__name__, e))
    sys.stdout.flush()
    sys.stdout.buffer.write(doc)
    sys.stdout.buffer.flush()
    if not complete and not a.allow_damaged:
        return _fail("part of the input could not be read (inputs.damaged lists it); "
                     "--allow-damaged accepts the results of what was read")
    return 0


if __name__ == "__main__":
    sys.exit(main())
