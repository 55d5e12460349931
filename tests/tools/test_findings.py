# test_findings.py: analyze's findings from the built-in rules and a user's rules file, on
# traces with stated intervals: the value to the last digit, the evidence, and severity gated
# on the absolute magnitude (the same share over one step or few calls is only `info`).
import json

from conftest import run
from test_analyze import Proc, io_procs

MS = 1_000_000


def io_bound_run(d, steps):
    """Each 100 ms step: compute for 50 ms, then a read of 40 ms that nothing hides."""
    p = Proc(100, rank=0)
    for k in range(steps):
        t = k * 100 * MS
        p.ev("step", "compute", t, t + 100 * MS, step=k)
        p.ev("forward", "compute", t, t + 50 * MS)
        p.ev("read", "POSIX", t + 55 * MS, t + 95 * MS, fhash=5, fd=3, ret=1 << 20)
    d.mkdir()
    return p.write(d)


def findings(*args):
    p = run("analyze", "--json", *args, check=False)
    assert p.returncode in (0, 2), p.stderr
    return {f["rule"]: f for f in json.loads(p.stdout)["findings"]}, p


def test_io_not_hidden_is_critical_only_with_enough_time(tmp_path):
    f, _ = findings(io_bound_run(tmp_path / "long", 30))
    x = f["io_not_hidden"]
    assert (x["severity"], x["metric"], x["value"]) == ("critical", "bound_by.io", 40)
    assert x["evidence"]["magnitude_ns"] == 30 * 40 * MS and x["evidence"]["magnitude_count"] == 30
    assert x["evidence"]["details"]["steps_ns"] == 30 * 100 * MS
    assert x["evidence"]["details"]["worst_step"]["part_ns"] == 40 * MS
    assert x["suggestion"]
    # the same share over one step: 40 ms, under the rule's 1 s: at most info
    f, _ = findings(io_bound_run(tmp_path / "short", 1))
    assert f["io_not_hidden"]["severity"] == "info" and f["io_not_hidden"]["value"] == 40


def test_small_accesses_gated_on_count(tmp_path):
    def reads(d, n):
        p = Proc(200, rank=0)
        for k in range(n):
            p.ev("read", "POSIX", 10 * k, 10 * k + 5, fhash=9, fd=3, ret=100 if k % 10 else 1 << 20)
        d.mkdir()
        return p.write(d)

    f, _ = findings(reads(tmp_path / "many", 2000))
    x = f["small_accesses"]
    assert (x["severity"], x["value"]) == ("critical", 90)
    assert x["evidence"]["details"]["calls_up_to_10KiB"] == 1800
    assert x["evidence"]["details"]["common_access_sizes"][0] == {"size": 100, "count": 1800}
    f, _ = findings(reads(tmp_path / "few", 20))  # 90% of 20 calls: info
    assert f["small_accesses"]["severity"] == "info"


def test_rules_file_changes_and_adds_rules(tmp_path):
    trace = io_bound_run(tmp_path / "run", 30)
    rules = tmp_path / "rules.yaml"
    rules.write_text("rules:\n"
                     "  - {name: io_not_hidden, warning: 50, critical: 60}\n"
                     "  - {name: compute_heavy, metric: bound_by.compute, warning: 40,\n"
                     "     critical: 90, min_ns: 1000, suggestion: look at the model}\n"
                     "  - {name: random_access, warning: 20}\n"
                     "  - {name: small_accesses, enabled: false}\n")
    f, _ = findings(trace, "--rules", rules)
    assert "io_not_hidden" not in f  # 40% is under its new warning
    assert f["compute_heavy"]["value"] == 50 and f["compute_heavy"]["severity"] == "warning"
    assert f["compute_heavy"]["suggestion"] == "look at the model"
    # random accesses in io_procs: 8 ordered, 6 sequential (test_analyze states them): 25%
    paths = [p.write(tmp_path) for p in io_procs()]
    f, _ = findings(*paths, "--rules", rules)
    assert f["random_access"]["value"] == 25 and f["random_access"]["severity"] == "info"
    assert f["random_access"]["evidence"]["details"]["ordered_accesses"] == 8
    for bad in ("rules: [{name: x, metric: no.such.metric, warning: 1, critical: 2}]\n",
                "rules: [{name: io_not_hidden, warning: 50, critical: 10}]\n",
                "rules: {io_not_hidden: 1}\n"):
        rules.write_text(bad)
        p = run("analyze", "--json", trace, "--rules", rules, check=False)
        assert p.returncode == 2 and "--rules" in p.stderr, bad


def test_checkpoint_stall_in_steps(tmp_path):
    p = Proc(300, rank=0)
    for k in range(10):
        p.ev("step", "compute", k * 100 * MS, (k + 1) * 100 * MS, step=k)
    p.ev("save", "checkpoint", 1000 * MS, 3500 * MS)  # 2.5 s: 25 median steps
    d = tmp_path / "c"
    d.mkdir()
    f, _ = findings(p.write(d))
    x = f["checkpoint_stall"]
    assert (x["severity"], x["value"]) == ("critical", 2500)
    assert x["evidence"]["details"]["longest_ns"] == 2500 * MS
