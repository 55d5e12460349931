"""test_telemetry.py: telemetry.interval's counters in real C and Python programs.

Nothing here times anything: the programs' phases are regions in the same trace, and the
counters are set against them; counts are checked leniently (a loaded machine delays samples).
"""
import glob
import json
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]
CLI = os.environ["DFTRACE_CLI"]
PROG = os.path.join(BIN, "telemetry_prog")
INTERVAL = 0.05  # seconds


def env_for(tmp, **extra):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith("DFTRACE_") or k in ("DFTRACE_TEST_BIN", "DFTRACE_CLI")}
    e.update({"DFTRACE_ENABLE": "1", "DFTRACE_LOG_FILE": str(tmp / "trace"),
              "DFTRACE_TELEMETRY_INTERVAL": "%dms" % (INTERVAL * 1000)})
    e.update(extra)
    return {k: v for k, v in e.items() if v is not None}


def run(cmd, tmp, **extra):
    p = subprocess.run(cmd, env=env_for(tmp, **extra), capture_output=True, text=True,
                       timeout=300)
    assert p.returncode == 0, (p.returncode, p.stderr)
    return p


def traces(tmp):
    return sorted(glob.glob(str(tmp / "*.pfw.gz")))


def load(path):
    events = tc.load_checked(path)
    tc.check_format(events)
    return events


def counters(events, name):
    return sorted((e for e in events if e.get("ph") == "C" and e["cat"] == "sys"
                   and e["name"] == name), key=lambda e: e["ts"])


def region(events, name):
    r = [e for e in events if e.get("ph") == "X" and e["cat"] == "app" and e["name"] == name]
    assert r, name
    return r[0]


def check_samples(events):
    """Process samples at the interval: several, their median gap within a factor of two of the
    interval (a loaded machine delays single samples; the last, written at finalize, left out),
    and not more than the span allows."""
    proc = counters(events, "process")
    assert len(proc) >= 3, len(proc)
    ts = [e["ts"] for e in proc]
    gaps = sorted(b - a for a, b in zip(ts, ts[1:-1]))
    assert INTERVAL * 1e6 / 2 <= gaps[len(gaps) // 2] <= INTERVAL * 1e6 * 2, gaps
    span_s = (ts[-1] - ts[0]) / 1e6
    assert len(proc) <= span_s / INTERVAL + 3, (len(proc), span_s)
    return proc


def cpu_s(e):
    return e["args"]["cpu_user_s"] + e["args"]["cpu_system_s"]


def test_c_program_cpu_and_memory(tmp_path):
    run([PROG], tmp_path)
    [path] = traces(tmp_path)
    ev = load(path)
    proc = check_samples(ev)
    for e in proc:
        for k in ("cpu_user_s", "cpu_system_s", "rss_bytes", "peak_rss_bytes", "ctx_voluntary",
                  "ctx_involuntary", "threads", "open_fds"):
            assert k in e["args"], (k, e)
        assert e["pid"] == proc[0]["pid"] and e["tid"] != e["pid"]  # its own thread
    busy, alloc = region(ev, "busy"), region(ev, "allocate")
    before = [e for e in proc if e["ts"] <= busy["ts"]]
    after = [e for e in proc if e["ts"] >= busy["ts"] + busy["dur"]]
    assert before and after
    # The busy loop used 0.5 s of CPU (the clock-tick resolution is 10 ms).
    assert cpu_s(after[0]) - cpu_s(before[-1]) >= 0.4, (before[-1], after[0])
    # The 96 MiB block, touched, is resident after the allocation.
    pre = [e for e in proc if e["ts"] <= alloc["ts"]]
    post = [e for e in proc if e["ts"] >= alloc["ts"] + alloc["dur"]]
    assert pre and post
    assert post[0]["args"]["rss_bytes"] >= pre[-1]["args"]["rss_bytes"] + (64 << 20)
    assert post[0]["args"]["peak_rss_bytes"] >= post[0]["args"]["rss_bytes"]
    # The node's counters: this process was the only one, so it held the node's lock.
    assert counters(ev, "memory") and counters(ev, "cpu")
    m = counters(ev, "memory")[0]["args"]
    assert 0 < m["MemAvailable"] <= m["MemTotal"]
    for e in counters(ev, "cpu"):
        assert 0 <= e["args"]["busy_pct"] <= 100


def test_python_program(tmp_path):
    script = tmp_path / "work.py"
    script.write_text(
        "import time\n"
        "import dftrace\n"
        "with dftrace.region('quiet', 'app'):\n"
        "    time.sleep(0.3)\n"
        "with dftrace.region('busy', 'app'):\n"
        "    t0 = time.process_time()\n"
        "    while time.process_time() - t0 < 0.5:\n"
        "        pass\n"
        "with dftrace.region('allocate', 'app'):\n"
        "    block = bytearray(96 << 20)\n"
        "    block[::4096] = b'\\x01' * len(block[::4096])\n"
        "with dftrace.region('after', 'app'):\n"
        "    time.sleep(0.3)\n"
        "dftrace.finalize()\n")
    run(["/usr/bin/python3", str(script)], tmp_path)
    [path] = traces(tmp_path)
    ev = load(path)
    proc = check_samples(ev)
    busy, alloc = region(ev, "busy"), region(ev, "allocate")
    before = [e for e in proc if e["ts"] <= busy["ts"]]
    after = [e for e in proc if e["ts"] >= busy["ts"] + busy["dur"]]
    assert cpu_s(after[0]) - cpu_s(before[-1]) >= 0.4
    pre = [e for e in proc if e["ts"] <= alloc["ts"]]
    post = [e for e in proc if e["ts"] >= alloc["ts"] + alloc["dur"]]
    assert post[0]["args"]["rss_bytes"] >= pre[-1]["args"]["rss_bytes"] + (64 << 20)


def test_off_by_default(tmp_path):
    run([PROG], tmp_path, DFTRACE_TELEMETRY_INTERVAL=None)
    [path] = traces(tmp_path)
    ev = load(path)
    assert not [e for e in ev if e.get("ph") == "C"]
    assert not glob.glob(str(tmp_path / "*.telemetry.lock"))


@pytest.mark.parametrize("value", ["fast", "5ms", "-1s", "2 days"])
def test_bad_value_says_so_once(tmp_path, value):
    p = run([PROG], tmp_path, DFTRACE_TELEMETRY_INTERVAL=value)
    said = [l for l in p.stderr.splitlines() if "DFTRACE_TELEMETRY_INTERVAL" in l]
    assert len(said) == 1, p.stderr
    assert value in said[0] and "10ms" in said[0], said
    [path] = traces(tmp_path)
    assert not [e for e in load(path) if e.get("ph") == "C"]


def test_forked_child_samples_itself(tmp_path):
    run([PROG, "fork"], tmp_path)
    paths = traces(tmp_path)
    assert len(paths) == 2, paths
    by_pid = {}
    for p in paths:
        ev = load(p)
        proc = counters(ev, "process")
        assert proc, p
        by_pid[proc[0]["pid"]] = (ev, proc)
    child = [v for v in by_pid.values() if any(e["name"] == "busy" for e in v[0]
                                                if e.get("ph") == "X")]
    assert len(child) == 1
    ev, proc = child[0]
    busy = region(ev, "busy")
    after = [e for e in proc if e["ts"] >= busy["ts"] + busy["dur"]]
    assert after and all(e["pid"] == proc[0]["pid"] for e in proc)
    # The parent held the node's lock: the child writes no node counters.
    assert not counters(ev, "memory")


def test_node_counters_from_one_process_at_a_time(tmp_path):
    procs = [subprocess.Popen([PROG, "sleep", "1500"], env=env_for(tmp_path),
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    spans = []
    for path in traces(tmp_path):
        mem = counters(load(path), "memory")
        if mem:
            spans.append((mem[0]["ts"], mem[-1]["ts"]))
    assert spans
    spans.sort()
    for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
        assert b0 > a1, spans  # never two writers at once
    assert len(glob.glob(str(tmp_path / "*.telemetry.lock"))) == 1


def test_sampler_reads_are_not_traced_io(tmp_path):
    run([CLI, "run", "--", PROG], tmp_path)
    [path] = traces(tmp_path)
    ev = load(path)
    assert counters(ev, "process")
    fh = {e["args"]["value"]: e["args"]["name"] for e in ev
          if e.get("ph") == "M" and e["name"] == "FH"}
    assert not [n for n in fh.values() if n.startswith("/proc")], fh
    sampler_tid = counters(ev, "process")[0]["tid"]
    assert not [e for e in ev if e.get("ph") == "X" and e["tid"] == sampler_tid]


def test_stat_and_report_show_counters(tmp_path):
    run([PROG], tmp_path)
    [path] = traces(tmp_path)
    proc = counters(load(path), "process")
    out = subprocess.run([CLI, "stat", "--json", path], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    series = {(s["cat"], s["name"], s["series"]): s for s in json.loads(out.stdout)["counter_series"]}
    rss = series[("sys", "process", "rss_bytes")]
    values = [e["args"]["rss_bytes"] for e in proc]
    assert (rss["count"], rss["min"], rss["max"], rss["last"]) == (
        len(values), min(values), max(values), values[-1])
    text = subprocess.run([CLI, "stat", path], capture_output=True, text=True, timeout=120)
    assert "rss_bytes" in text.stdout and "counters" in text.stdout
    try:
        import matplotlib  # noqa: F401
        import pandas  # noqa: F401
    except ImportError as e:
        pytest.skip("the report needs matplotlib and pandas (%s)" % e)
    html = tmp_path / "r.html"
    r = subprocess.run([sys.executable, "-m", "dftrace.report", path, "-o", str(html)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    page = html.read_text()
    assert 'id="telemetry"' in page and "rss_bytes" in page
