"""test_tree.py: the AI tree (docs/ai-tree.md) through the C++ face, checked event by event."""
import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

BIN = os.environ["DFTRACE_TEST_BIN"]


def trace(tmp_path, mode, env=None):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE", "DFTRACER"))}
    e.update({"DFTRACE_ENABLE": "1", "DFTRACE_LOG_FILE": str(tmp_path / "t")})
    e.update(env or {})
    p = subprocess.run([os.path.join(BIN, "tree_prog"), mode], env=e, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    return tc.load_checked(tc.only_file(tmp_path))


def own_args(e):
    return {k: v for k, v in e["args"].items() if k not in ("hhash", "level", "p_idx")}


class Model:
    """Independent model of what the loop must write: events in the order they end."""

    def __init__(self):
        self.written = []
        self.args = {}

    def open(self, name, cat, parent):
        level = 1 if parent is None else parent["level"] + 1
        return {"name": name, "cat": cat, "level": level, "parent": parent}

    def close(self, rec, extra=None):
        rec["args"] = dict(self.args)
        rec["args"].update(extra or {})
        self.written.append(rec)

    def event(self, name, cat, parent, extra=None):
        self.close(self.open(name, cat, parent), extra)


def test_training_loop_line_by_line(tmp_path):
    ev = trace(tmp_path, "loop")
    m = Model()
    m.event("checkpoint.init", "checkpoint", None)
    m.event("restart", "checkpoint", None)
    for e, epoch in enumerate([0, 1]):
        m.event("epoch.iter", "pipeline", None, {"count": e + 1})
        eb = m.open("epoch.block", "pipeline", None)
        m.args["epoch"] = epoch
        for s, item in enumerate([10, 20, 30]):
            m.event("fetch.iter", "dataloader", eb, {"count": s + 1})
            fb = m.open("fetch.block", "dataloader", eb)
            m.args["step"] = s
            for name, cat, extra in [("item", "data", {"item": item}), ("preprocess.collate", "data", {}),
                                     ("transfer", "device", {}), ("forward", "compute", {}),
                                     ("backward", "compute", {}), ("all_reduce", "comm", {"bytes": 4096}),
                                     ("step", "compute", {})]:
                m.event(name, cat, fb, extra)
            m.close(fb, {"count": s + 1})
        m.event("capture", "checkpoint", eb)
        m.close(eb, {"count": e + 1})

    got = tc.user_events(ev)
    assert len(got) == len(m.written)
    index = {id(r): i for i, r in enumerate(m.written)}
    for n, (g, w) in enumerate(zip(got, m.written)):
        assert (g["name"], g["cat"]) == (w["name"], w["cat"]), (n, g, w)
        assert g["args"]["level"] == w["level"], (n, g, w)
        want_parent = -1 if w["parent"] is None else got[index[id(w["parent"])]]["id"]
        assert g["args"]["p_idx"] == want_parent, (n, g, w)
        assert own_args(g) == w["args"], (n, g, w)
        assert list(own_args(g)) == list(w["args"]), ("argument order", n, g, w)


def test_iter_over_a_count_is_pythons_range(tmp_path):
    ev = trace(tmp_path, "count")
    got = [(e["name"], own_args(e)) for e in tc.user_events(ev)]
    want = []
    for i in range(3):
        want += [("epoch.iter", {"count": i + 1}), ("forward", {"epoch_item": i}),
                 ("epoch.block", {"count": i + 1})]
    # iter(0) and iter(-4) yield nothing; iter(2u) yields 0 and 1.
    for i in range(2):
        want += [("fetch.iter", {"count": i + 1}), ("fetch.block", {"count": i + 1})]
    assert got == want


def test_update_subtree_root_removal_end_value_and_no_leak(tmp_path):
    ev = trace(tmp_path, "update")
    got = [(e["name"], own_args(e)) for e in tc.user_events(ev)]
    assert got == [
        ("forward", {"lr": 0.5}),
        ("item", {}),
        ("item", {"epoch": 1}),
        ("forward", {"lr": 0.5, "epoch": 2}),  # the value when the event ended
        ("forward", {"lr": 0.5, "epoch": 2, "layer": 7}),
        ("forward", {"lr": 0.5, "epoch": 2}),  # per-use layer did not leak into the node
        ("forward", {"epoch": 2}),  # lr removed from compute's subtree
        ("backward", {"epoch": 2}),  # forward's update did not reach its sibling
        ("forward", {"epoch": 2, "note": "x"}),
    ], got


EXPECT_ENABLE = ["barrier", "all_reduce", "forward", "item", "forward", "train"]


def test_enable_disable_every_level_and_per_use(tmp_path):
    names = [e["name"] for e in tc.user_events(trace(tmp_path, "enable"))]
    # forward forced on while compute is off; backward stays off; item forced off; a function
    # wrapped while everything was off is traced once enabled.
    assert names == EXPECT_ENABLE, names


@pytest.mark.parametrize("how", ["env", "yaml", "dftracer-env"])
def test_category_switches_from_configuration(tmp_path, how):
    env = {}
    if how == "env":
        env["DFTRACE_CATEGORIES"] = "-comm,+comm.all_reduce"
    elif how == "dftracer-env":
        env["DFTRACE_CATEGORIES"] = "comm.barrier:off"
        env["DFTRACER_ENABLE"] = "1"
    else:
        cfg = tmp_path / "conf.yaml"
        cfg.write_text("categories:\n  comm.all_reduce: true\n  comm: false\n")
        env["DFTRACE_CONFIG"] = str(cfg)
    names = [e["name"] for e in tc.user_events(trace(tmp_path, "enable", env))]
    assert names == EXPECT_ENABLE[1:], names  # barrier switched off, all_reduce kept


def test_whole_category_disabled_leaves_header_and_footer_only(tmp_path):
    ev = trace(tmp_path, "metadata", {"DFTRACE_CATEGORIES": "-compute,-pipeline"})
    assert tc.user_events(ev) == []
    assert [e for e in ev if e["name"] == "CM"] == []
    assert ev[-1]["name"] == "end" and ev[-1]["args"]["num_events"] == 0


def test_metadata_mode_writes_cm_lines_instead_of_epoch_events(tmp_path):
    ev = trace(tmp_path, "metadata")
    assert [e["name"] for e in tc.user_events(ev)] == ["forward", "forward"]
    cm = [e for e in ev if e["name"] == "CM"]
    assert [c["args"]["name"] for c in cm] == ["epoch.start", "epoch.end"] * 2
    values = [int(c["args"]["value"]) for c in cm]
    assert all(isinstance(c["args"]["value"], str) for c in cm)
    assert values == sorted(values)
    fwd = tc.user_events(ev)
    for k in range(2):  # each forward lies between its epoch's start and end marks
        assert values[2 * k] <= fwd[k]["ts"] and fwd[k]["ts"] + fwd[k]["dur"] <= values[2 * k + 1]
    assert all(c["cat"] == "dftracer" and c["ph"] == "M" for c in cm)


def test_start_stop_by_node_on_the_threads_stack(tmp_path):
    e = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE", "DFTRACER"))}
    e.update({"DFTRACE_ENABLE": "1", "DFTRACE_LOG_FILE": str(tmp_path / "t")})
    p = subprocess.run([os.path.join(BIN, "tree_prog"), "start_stop"], env=e, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    # the inner forward ends before backward, inside it: not enclosed in time, so no nesting check
    ev = tc.load_checked(tc.only_file(tmp_path), nesting=False)
    x = tc.user_events(ev)
    assert [(e["name"], e["args"]["level"]) for e in x] == [
        ("forward", 3), ("backward", 4), ("forward", 2), ("train", 1)]
    by_level = {e["args"]["level"]: e for e in x}
    assert [by_level[k]["args"]["p_idx"] for k in (1, 2, 3, 4)] == [
        -1, by_level[1]["id"], by_level[2]["id"], by_level[3]["id"]]
    assert len({e["tid"] for e in x}) == 1


def test_section8_defects_do_not_happen(tmp_path):
    ev = trace(tmp_path, "defects")
    x = tc.user_events(ev)
    # two threads in one node: 2 forward + 2 backward, each backward under its own thread's forward
    thr = [e for e in x if "thread" in e["args"]]
    assert sorted(e["name"] for e in thr) == ["backward", "backward", "forward", "forward"]
    for b in (e for e in thr if e["name"] == "backward"):
        f = [e for e in thr if e["name"] == "forward" and e["tid"] == b["tid"]][0]
        assert b["args"]["p_idx"] == f["id"] and b["args"]["level"] == 2
        assert f["args"]["thread"] == b["args"]["thread"]
    assert len({e["tid"] for e in thr}) == 2
    rest = [e for e in x if "thread" not in e["args"]]
    # recursion: one event per call, nested
    rec = [e for e in rest if e["name"] == "forward"]
    assert [(e["args"]["depth"], e["args"]["level"]) for e in rec] == [(0, 4), (1, 3), (2, 2), (3, 1)]
    for inner, outer in zip(rec, rec[1:]):
        assert inner["args"]["p_idx"] == outer["id"]
    after = [(e["name"], e["args"].get("count"), e["args"]["level"]) for e in rest if e["name"] != "forward"]
    assert after == [
        ("fetch.iter", 1, 1), ("fetch.block", 1, 1), ("fetch.iter", 2, 1), ("fetch.block", 2, 1),  # break
        ("epoch.iter", 1, 1), ("step", None, 2), ("epoch.block", 1, 1),
        ("epoch.iter", 2, 1), ("step", None, 2), ("epoch.block", 2, 1),  # exception
        ("capture", None, 1), ("checkpoint.init", None, 1), ("compute.late", None, 1),
    ], after
    for e in rest[-3:]:
        assert e["args"]["p_idx"] == -1  # nothing leaked onto the stack
