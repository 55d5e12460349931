"""test_torch_graph.py: dftrace.torch.model_graph on Debian's PyTorch: torch.fx graphs of a
model with a module fx cannot trace (data-dependent control flow), written into the trace and
printed by `dftrace cat --graph`."""
import os
import subprocess

import pytest

pytest.importorskip("torch", reason="python3-torch is not installed (scripts/setup-debian.sh test)")

GRAPH = """
import json, torch
import dftrace.torch as dt

class Gate(torch.nn.Module):          # data-dependent control flow: fx cannot trace it
    def __init__(self):
        super().__init__()
        self.small = torch.nn.Linear(8, 8)
        self.big = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU())
    def forward(self, x):
        if x.sum() > 0:
            return self.small(x)
        return self.big(x)

class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Linear(4, 8)
        self.gate = Gate()
        self.head = torch.nn.Linear(8, 2)
    def forward(self, x):
        return self.head(torch.relu(self.gate(self.enc(x))))

torch.manual_seed(0)
doc = dt.model_graph(Net(), example_inputs=torch.randn(3, 4))
print(json.dumps(doc))
"""


def test_model_graph_with_an_untraceable_module(runner):
    import json
    p = runner.run(GRAPH)
    doc = json.loads(p.stdout.strip().splitlines()[-1])
    graphs = {g["path"]: g for g in doc["graphs"]}
    assert doc["model"] == "Net" and doc["failures"] == 1
    assert list(graphs) == ["", "gate", "gate.small", "gate.big"]
    root = graphs[""]
    assert root["ok"] and root["leaves"] == ["gate"]  # the failing module is a leaf
    ops = [(n["op"], n["target"]) for n in root["nodes"]]
    assert ops == [("placeholder", "x"), ("call_module", "enc"), ("call_module", "gate"),
                   ("call_function", "torch.relu"), ("call_module", "head"), ("output", "output")]
    head = [n for n in root["nodes"] if n["target"] == "head"][0]
    assert head["shape"] == [3, 2] and head["dtype"] == "float32" and head["args"] == ["relu"]
    gate = graphs["gate"]
    assert not gate["ok"] and "control flow" in gate["error"] and gate["module"] == "Gate"
    # its submodules, traced separately
    assert graphs["gate.small"]["ok"] and graphs["gate.big"]["ok"]
    assert [n["target"] for n in graphs["gate.big"]["nodes"] if n["op"] == "call_module"] == \
        ["gate.big.0", "gate.big.1"]
    # in the trace, as metadata, and printed by the tool
    (t,) = runner.traces()
    (cm,) = [r for r in t.metadata if r["args"]["name"] == "model_graph"]
    assert json.loads(cm["args"]["value"]) == doc
    cli = os.path.join(os.environ["DFTRACE_BUILD_DIR"], "tools", "dftrace")
    out = subprocess.run([cli, "cat", "--graph", t.path], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert text.startswith("model graph of Net (pid %d): 4 graphs, 1 not traceable" % cm["pid"])
    assert "gate (Gate): not traced: TraceError: symbolically traced variables" in text
    assert "leaves fx could not trace: gate" in text
    assert "gate.big (Sequential)" in text and "gate.big.1" in text
    row = [l for l in text.splitlines() if l.split()[:1] == ["head"]][0]
    assert row.split()[1:4] == ["call_module", "head", "(relu)"] and "[3, 2] float32" in row
    # a trace without graphs: one line, status 1
    none = subprocess.run([cli, "cat", "--graph", t.path + ".none"], capture_output=True,
                          text=True)
    assert none.returncode != 0
