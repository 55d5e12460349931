#!/usr/bin/env python3
"""gpu_check.py: the checks of scripts/gpu-check.sh (which builds first and calls this), each
in its own processes with its own time limit, all within the script's deadline. Each check
asserts what it must show; its result is passed, failed or skipped, with the reason and its
figures. Writes OUT/summary.json, OUT/summary.md, OUT/traces.tar.gz and OUT/logs.tar.gz.

The functional checks run side by side (the machine has cores to spare); the timed ones run
afterwards, one at a time, their arms alternated round by round."""
import argparse
import bisect
import collections
import concurrent.futures
import glob
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import textwrap
import time
import traceback

A = None  # the parsed arguments
PY = sys.executable
SLACK_US = 5  # clock conversion and microsecond rounding (tests/integration/gpu/check_gpu_trace.py)


class Skip(Exception):
    pass


# ---------------------------------------------------------------- helpers

def env_base(**extra):
    """The environment of a check's process: no dftrace settings of ours, the build's package."""
    e = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    e.pop("LD_PRELOAD", None)
    e["PYTHONPATH"] = os.path.join(A.build, "bindings", "python")
    e["DFTRACE_PYTHON"] = PY
    e["PYTHONUNBUFFERED"] = "1"
    e["HF_HUB_OFFLINE"] = "1"  # nothing is downloaded: the models are built from configs
    e.update({k: str(v) for k, v in extra.items()})
    return e


def run(name, cmd, env, timeout, cwd=None):
    """Runs cmd; its output goes to logs/<name>.log; returns the CompletedProcess."""
    log = os.path.join(A.work, "logs", name + ".log")
    t0 = time.time()
    timeout = int(max(5, min(timeout, A.deadline - 20 - t0)))  # never past the script's budget
    try:
        p = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        with open(log, "a") as f:
            f.write("$ %s\nTIMEOUT after %d s\n%s\n%s\n" % (" ".join(cmd), timeout,
                    _text(e.stdout), _text(e.stderr)))
        raise AssertionError("%s: timed out after %d s" % (name, timeout))
    with open(log, "a") as f:
        f.write("$ %s\n(rc %d, %.1f s)\n--- stdout\n%s\n--- stderr\n%s\n"
                % (" ".join(cmd), p.returncode, time.time() - t0, p.stdout, p.stderr))
    return p


def _text(b):
    return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")


def tail(text, n=6):
    return " | ".join(text.strip().splitlines()[-n:])


def check_ok(p, what):
    assert p.returncode == 0, "%s exited %d: %s" % (what, p.returncode, tail(p.stderr + p.stdout))


def records(path):
    with gzip.open(path, "rt") as f:
        lines = f.read().splitlines()
    assert lines and lines[0] == "[", path + ": not a trace"
    assert lines[-1] == "]", path + ": not closed"
    return [json.loads(l) for l in lines[1:-1] if l.strip()]


def traces_in(d):
    return {p: records(p) for p in sorted(glob.glob(os.path.join(d, "*.pfw*")))}


def events(recs):
    return [r for r in recs if r.get("ph") == "X" and r.get("cat") != "dftracer"]


def counts(evs):
    return dict(collections.Counter(e["name"] for e in evs))


def keep_traces(d, label):
    """Keeps a check's traces for traces.tar.gz."""
    dst = os.path.join(A.work, "traces", label)
    os.makedirs(dst, exist_ok=True)
    for p in glob.glob(os.path.join(d, "*.pfw*")):
        shutil.copy(p, dst)


def step_trace(d, label):
    """The traces in d (kept for traces.tar.gz) and the records of the one that has steps."""
    traces = traces_in(d)
    keep_traces(d, label)
    main = [r for r in traces.values() if any(e["name"] == "step" for e in events(r))]
    assert len(main) == 1, "%d traces with steps" % len(main)
    return traces, main[0]


def torch_info():
    """(torch version, cuda available) of PY, or raises Skip."""
    p = subprocess.run([PY, "-c", "import torch; print(torch.__version__, torch.cuda.is_available())"],
                       capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise Skip("torch does not import in %s: %s" % (PY, tail(p.stderr, 1)))
    v, cuda = p.stdout.split()
    return v, cuda == "True"


def have_module(*names):
    for n in names:
        p = subprocess.run([PY, "-c", "import " + n], capture_output=True, text=True, timeout=120)
        if p.returncode == 0:
            return n
    return None


def need_python_face():
    if not glob.glob(os.path.join(A.build, "bindings", "python", "dftrace", "_dftrace*.so")):
        raise Skip("the Python face was not built for %s (Python.h missing? see configure.log)" % PY)


def cli():
    return os.path.join(A.build, "tools", "dftrace")


def write(name, text):
    path = os.path.join(A.work, name)
    with open(path, "w") as f:
        f.write(textwrap.dedent(text))
    return path


# ---------------------------------------------------------------- CUPTI

def check_cupti_program(fig):
    prog = os.path.join(A.build, "gpu_vector_add")
    if not os.path.exists(prog):
        raise Skip("gpu_vector_add not built (nvcc missing or failed: logs/nvcc.log)")
    test = os.path.join(A.src, "tests", "integration", "gpu", "check_gpu_trace.py")
    p = run("cupti_program", [PY, test, prog], env_base(), 240)
    if p.returncode == 77:
        raise Skip(tail(p.stdout, 1))
    check_ok(p, "check_gpu_trace.py (the gpu_cuda_program test)")
    fig["gpu_cuda_program"] = "passed"
    # The same program once more, its trace kept, checked here for the clock offset and counted
    # by `dftrace stat`.
    d = os.path.join(A.work, "cupti")
    os.makedirs(d, exist_ok=True)
    trace = os.path.join(d, "vector_add.pfw.gz")
    iters = 12
    p = run("cupti_program", [prog, str(iters), str(1 << 20)],
            env_base(DFTRACE_ENABLE=1, DFTRACE_OUTPUT_FILE=trace, DFTRACE_GPU_CUPTI=1,
                     DFTRACE_GPU_KINDS="kernel,memcpy,memset,sync,runtime"), 120)
    check_ok(p, "gpu_vector_add")
    evs = events(records(trace))
    forward = {e["id"]: e for e in evs if e["name"] == "forward"}
    work = [e for e in evs if e["cat"] == "device" and e["name"] in ("kernel", "transfer", "memset")]
    c = collections.Counter(e["name"] for e in work)
    fig.update(kernels=c["kernel"], transfers=c["transfer"], memsets=c["memset"])
    assert (c["kernel"], c["transfer"], c["memset"]) == (iters, 4 * iters, iters), c
    lead, lag = [], []
    for e in work:
        r = forward.get(e["args"].get("host_region"))
        assert r is not None, "GPU work not tied to its forward region: %s" % e
        lead.append(e["ts"] - r["ts"])
        lag.append(r["ts"] + r["dur"] - (e["ts"] + e["dur"]))
    fig["min_us_after_region_start"] = min(lead)
    fig["min_us_before_region_end"] = min(lag)
    assert min(lead) >= -SLACK_US and min(lag) >= -SLACK_US, "GPU work outside its region"
    p = run("cupti_program", [cli(), "stat", "--json", trace], env_base(), 60)
    check_ok(p, "dftrace stat")
    st = {(r["cat"], r["name"]): r["count"] for r in json.loads(p.stdout)["by_name"]}
    fig["stat"] = {"%s/%s" % k: v for k, v in st.items() if k[0] in ("device", "cuda")}
    for name, n in (("kernel", iters), ("transfer", 4 * iters), ("memset", iters), ("sync", iters)):
        assert st.get(("device", name)) == n, "dftrace stat counts %s %s, want %d" % (
            name, st.get(("device", name)), n)
    keep_traces(d, "cupti")


def check_gpu_no_device(fig):
    prog = os.path.join(A.build, "gpu_no_device_program")
    lib = os.path.join(A.build, "libdftrace.so")
    assert os.path.exists(prog), "gpu_no_device_program not built (logs/cc.log)"
    test = os.path.join(A.src, "tests", "integration", "gpu", "check_no_device.py")
    p = run("gpu_no_device", [PY, test, prog, lib], env_base(), 120)
    if p.returncode == 77:
        raise Skip(tail(p.stdout, 1))
    check_ok(p, "check_no_device.py (the gpu_no_device test)")
    fig["output"] = tail(p.stdout, 2)


# ---------------------------------------------------------------- torch

TRAIN = """
import math, sys, time
import torch
from torch.utils.data import DataLoader, Dataset

STEPS, EPOCHS, WORKERS = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
COMPILE = len(sys.argv) > 4 and sys.argv[4] == "compile"
dev = "cuda" if torch.cuda.is_available() else "cpu"
torch.manual_seed(0)

class Samples(Dataset):
    def __init__(self, n):
        self.x, self.y = torch.randn(n, 64), torch.randint(0, 10, (n,))
    def __len__(self):
        return len(self.x)
    def __getitem__(self, i):
        return self.x[i], self.y[i]

model = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                            torch.nn.ReLU(), torch.nn.Linear(256, 10)).to(dev)
opt = torch.optim.Adam(model.parameters(), lr=1e-3)
run_model = torch.compile(model) if COMPILE else model
loader = DataLoader(Samples(STEPS * 32), batch_size=32, num_workers=WORKERS)
losses, steps = [], 0
t0 = time.perf_counter()
for epoch in range(EPOCHS):
    for x, y in loader:
        x, y = x.to(dev), y.to(dev)
        loss = torch.nn.functional.cross_entropy(run_model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        steps += 1
        if steps % 50 == 0:
            losses.append(float(loss))
if dev == "cuda":
    torch.cuda.synchronize()
print("loop_seconds %.6f" % (time.perf_counter() - t0))
print("steps", steps, "device", dev, "losses", " ".join("%.4f" % l for l in losses))
assert all(math.isfinite(l) for l in losses)
if COMPILE:
    import torch._dynamo.utils as du
    print("graph_breaks", sum(du.counters["graph_break"].values()),
          "frames_ok", du.counters["stats"]["unique_graphs"])
"""


def run_train(label, steps, epochs, workers, extra=(), run_opts=("--torch", "--deep"), cupti=True,
              timeout=180, traced=True):
    d = os.path.join(A.work, label)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    script = write("train.py", TRAIN)
    cmd = [PY, script, str(steps), str(epochs), str(workers), *extra]
    env = env_base()
    if cupti:
        env.update(DFTRACE_GPU_CUPTI="1", DFTRACE_GPU_KINDS="kernel,memcpy,memset,sync,runtime")
    if traced:
        cmd = [cli(), "run", *run_opts, "--out", d, "--", *cmd]
    p = run(label, cmd, env, timeout, cwd=A.work)
    check_ok(p, label)
    return p, d


def check_torch_deep(fig):
    need_python_face()
    version, cuda = torch_info()
    fig.update(torch=version, device="cuda" if cuda else "cpu")
    steps = 300
    p, d = run_train("torch_deep", steps, 1, 2)
    assert "dftrace: torch auto-instrumentation off" not in p.stderr, tail(p.stderr)
    complaints = [l for l in p.stderr.splitlines() if l.startswith("dftrace:")]
    fig["dftrace_lines"] = complaints[:5]
    traces, recs = step_trace(d, "torch_deep")
    evs = events(recs)
    c = counts(evs)
    fig["counts"] = {k: v for k, v in sorted(c.items()) if not k.startswith(("read", "open", "close",
                                                                            "lseek", "fstat", "stat"))}
    for name in ("step", "forward", "backward", "step.optimizer"):
        assert c.get(name) == steps, "%s: %s events, want %d" % (name, c.get(name), steps)
    for path, params in (("0", 64 * 256 + 256), ("2", 256 * 256 + 256), ("4", 256 * 10 + 10)):
        fw = [e for e in evs if e["name"] == "forward." + path]
        assert len(fw) == steps and all(e["args"].get("params") == params for e in fw), \
            "forward.%s: %d events" % (path, len(fw))
        assert c.get("backward." + path) == steps, "backward.%s: %s" % (path, c.get("backward." + path))
    assert c.get("fetch") == steps + 1, "fetch: %s, want %d" % (c.get("fetch"), steps + 1)
    batches = [e for r in traces.values() for e in events(r) if e["name"] == "batch"]
    workers = {e["args"].get("worker") for e in batches}
    fig["batches_by_worker"] = dict(collections.Counter(e["args"].get("worker") for e in batches))
    assert len(batches) == steps and workers == {0, 1}, (len(batches), workers)
    items = sum(1 for r in traces.values() for e in events(r) if e["name"] == "item")
    assert items == steps * 32, "%d items" % items
    mem = [r for r in recs if r.get("ph") == "C" and r.get("name") == "step"]
    assert len(mem) == steps, "%d memory samples" % len(mem)
    peak = [m["args"]["memory"] for m in mem]
    fig["step_memory_bytes"] = {"min": min(peak), "max": max(peak)}
    transfers = [e for e in evs if e["name"] == "transfer" and e["cat"] == "device"
                 and "src" in e["args"]]
    if not cuda:
        fig["not_checked"] = "no CUDA device: H2D transfers, CUDA peak memory, CUPTI kernels"
        return
    h2d = [e for e in transfers if e["args"]["src"] == "cpu" and e["args"]["dst"].startswith("cuda")]
    sizes = collections.Counter(e["args"].get("bytes") for e in h2d)
    fig["h2d_transfers"] = {str(k): v for k, v in sizes.items()}
    assert sizes[32 * 64 * 4] == steps and sizes[32 * 8] == steps, sizes
    # CUDA peak of the step: above the parameters and Adam's two moments, far below the RSS.
    params = (64 * 256 + 256 + 256 * 256 + 256 + 256 * 10 + 10) * 4
    assert all(3 * params <= m < 256 * 2**20 for m in peak[1:]), fig["step_memory_bytes"]
    # CUPTI: kernels, each tied to its host region, which lies in a step.
    by_id = {e["id"]: e for e in evs}
    kernels = [e for e in evs if e["cat"] == "device" and e["name"] == "kernel"]
    assert len(kernels) >= 5 * steps, "%d kernels" % len(kernels)
    tied = [k for k in kernels if k["args"].get("host_region") in by_id]
    tied_ids = {id(k) for k in tied}
    host = collections.Counter(by_id[k["args"]["host_region"]]["name"] for k in tied)
    fig["kernels"] = len(kernels)
    fig["kernels_by_host_region"] = dict(host.most_common(12))
    fig["kernels_untied"] = len(kernels) - len(tied)
    # A kernel launched while no region was open on its thread (the autograd thread before a
    # layer's backward begins) has none to be tied to; one launched inside a region must be.
    api = {e["args"]["correlation_id"]: e for e in evs if e["cat"] == "cuda"}
    regions_of = collections.defaultdict(list)  # host regions by thread
    for e in evs:
        if e["cat"] not in ("cuda", "device") and e["tid"] < 2**30:
            regions_of[e["tid"]].append(e)
    lost = 0
    for k in kernels:
        a = api.get(k["args"]["correlation_id"])
        if id(k) in tied_ids or a is None:
            continue
        lost += any(h["ts"] <= a["ts"] and a["ts"] + a["dur"] <= h["ts"] + h["dur"]
                    for h in regions_of[a["tid"]])
    fig["kernels_untied_inside_a_region"] = lost
    fig["kernels_without_api_record"] = sum(k["args"]["correlation_id"] not in api for k in kernels)
    assert lost <= 0.02 * len(kernels), "%d of %d kernels launched inside a region but not tied" % (
        lost, len(kernels))
    early = [k for k in tied if k["ts"] < by_id[k["args"]["host_region"]]["ts"] - SLACK_US]
    assert not early, "%d kernels start before the region that launched them" % len(early)
    steps_ev = sorted((e for e in evs if e["name"] == "step"), key=lambda e: e["ts"])
    starts = [s["ts"] for s in steps_ev]
    in_step = 0
    for k in tied:
        r = by_id[k["args"]["host_region"]]
        i = bisect.bisect_right(starts, r["ts"]) - 1
        s = steps_ev[i] if i >= 0 else None
        in_step += bool(s and r["ts"] + r["dur"] <= s["ts"] + s["dur"])
    fig["kernels_in_a_step"] = in_step
    for layer in ("forward.0", "forward.2", "forward.4", "step.optimizer"):
        assert host.get(layer, 0) >= steps, "kernels under %s: %s" % (layer, host.get(layer))
    assert in_step >= 0.9 * len(tied), "%d of %d tied kernels in a step" % (in_step, len(tied))
    memcpy = [e for e in evs if e["cat"] == "device" and e["name"] == "transfer" and
              e["args"].get("kind") == "HtoD"]
    fig["cupti_htod_copies"] = len(memcpy)
    assert len(memcpy) >= 2 * steps, "%d HtoD copies from CUPTI" % len(memcpy)


def compile_run(fig, label, run_opts):
    need_python_face()
    version, cuda = torch_info()
    fig.update(torch=version, device="cuda" if cuda else "cpu")
    if int(version.split(".")[0]) < 2:
        raise Skip("torch.compile needs torch 2 (here %s)" % version)
    steps = 100
    p, d = run_train(label, steps, 1, 2, extra=("compile",), run_opts=run_opts, timeout=300)
    m = re.search(r"graph_breaks (\d+) frames_ok (\d+)", p.stdout)
    if m:
        fig.update(graph_breaks=int(m.group(1)), unique_graphs=int(m.group(2)))
    fig["dftrace_lines"] = [l for l in p.stderr.splitlines() if l.startswith("dftrace:")][:5]
    evs = events(step_trace(d, label)[1])
    c = counts(evs)
    fig["counts"] = {k: v for k, v in sorted(c.items()) if k in (
        "step", "forward", "backward", "step.optimizer", "fetch", "transfer", "kernel")
        or k.startswith(("forward.", "backward."))}
    for name in ("step", "forward", "backward", "step.optimizer"):
        assert c.get(name) == steps, "%s: %s events, want %d" % (name, c.get(name), steps)


def check_torch_compile(fig):
    """torch.compile under `dftrace run --torch --deep --no-io`: what is recorded."""
    compile_run(fig, "torch_compile", ("--torch", "--deep", "--no-io"))


def check_torch_compile_io(fig):
    """The same with libdftrace_io preloaded (the default): Triton's compiler workers run
    ptxas, which inherits the preload."""
    compile_run(fig, "torch_compile_io", ("--torch", "--deep"))


API = """
import json, sys
import torch
import dftrace
import dftrace.torch as dt

dev = "cuda" if torch.cuda.is_available() else "cpu"
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(), torch.nn.Linear(32, 4)).to(dev)
x = torch.randn(8, 16, device=dev)
bridge = dt.bridge_record_function()
with dftrace.ai.compute.forward:
    for _ in range(5):
        with torch.profiler.record_function("bridged.range"):
            model(x)
bridge.remove()
with torch.profiler.record_function("after.remove"):
    model(x)
table = dt.summary(show=True)
row = table.loc[("compute", "bridged_range")]
assert int(row["calls"]) == 5, row
assert ("compute", "after_remove") not in table.index
print("summary_rows", len(table))

class Branchy(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.a, self.b = torch.nn.Linear(16, 16), torch.nn.Linear(16, 4)
    def forward(self, x):
        if x.sum() > 0:  # data-dependent: fx can not trace this module
            x = self.a(x)
        return self.b(x)

g = dt.model_graph(model, example_inputs=x)
assert g["failures"] == 0 and g["graphs"][0]["ok"], g
shapes = [n.get("shape") for n in g["graphs"][0]["nodes"] if n["op"] == "call_module"]
assert shapes == [[8, 32], [8, 32], [8, 4]], shapes
g2 = dt.model_graph(torch.nn.Sequential(Branchy(), torch.nn.ReLU()).to(dev), example_inputs=x)
assert g2["failures"] == 1, g2
failed = [gr for gr in g2["graphs"] if not gr["ok"]]
assert [gr["path"] for gr in failed] == ["0"], g2["graphs"]
print("graphs", len(g["graphs"]), len(g2["graphs"]), "failures", g2["failures"])
"""


def check_torch_api(fig):
    need_python_face()
    version, cuda = torch_info()
    fig.update(torch=version, device="cuda" if cuda else "cpu")
    d = os.path.join(A.work, "torch_api")
    os.makedirs(d, exist_ok=True)
    p = run("torch_api", [PY, write("api.py", API)],
            env_base(DFTRACE_ENABLE=1, DFTRACE_LOG_FILE=os.path.join(d, "api")), 240, cwd=A.work)
    check_ok(p, "api.py")
    fig["stdout"] = [l for l in p.stdout.splitlines() if l.startswith(("summary_rows", "graphs"))]
    (recs,) = traces_in(d).values()
    evs = events(recs)
    br = [e for e in evs if e["name"] == "bridged_range"]
    fw = [e for e in evs if e["name"] == "forward" and e["cat"] == "compute"]
    assert len(br) == 5 and all(e["cat"] == "compute" for e in br), len(br)
    assert all(any(f["id"] == e["args"].get("p_idx") for f in fw) for e in br), "ranges not under forward"
    cm = [r for r in recs if r.get("ph") == "M" and r.get("name") == "CM"
          and "model_graph" in json.dumps(r.get("args", {}))]
    assert len(cm) == 2, "%d model_graph metadata lines" % len(cm)
    (path,) = traces_in(d).keys()
    p = run("torch_api", [cli(), "cat", "--graph", path], env_base(), 60)
    check_ok(p, "dftrace cat --graph")
    assert "Branchy" in p.stdout or "failed" in p.stdout.lower(), tail(p.stdout)
    keep_traces(d, "torch_api")


# ---------------------------------------------------------------- frameworks

HF = """
import sys, tempfile
import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel, Trainer, TrainingArguments
import dftrace.torch as dt

torch.manual_seed(0)
model = GPT2LMHeadModel(GPT2Config(n_layer=2, n_embd=64, n_head=2, vocab_size=512, n_positions=64))

class Tokens(torch.utils.data.Dataset):
    def __len__(self):
        return 20 * 8
    def __getitem__(self, i):
        ids = torch.randint(0, 512, (32,))
        return {"input_ids": ids, "labels": ids}

args = TrainingArguments(output_dir=tempfile.mkdtemp(), max_steps=20, per_device_train_batch_size=8,
                         report_to="none", save_strategy="no", logging_steps=10, disable_tqdm=True)
trainer = Trainer(model=model, args=args, train_dataset=Tokens(), callbacks=[dt.huggingface_callback()])
out = trainer.train()
print("global_step", out.global_step, "device", next(model.parameters()).device,
      "transformers", transformers.__version__)
"""

LIGHTNING = """
import sys
import torch
from torch.utils.data import DataLoader, TensorDataset
try:
    import lightning.pytorch as pl
except ImportError:
    import pytorch_lightning as pl
import dftrace.torch as dt

class Tiny(pl.LightningModule):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    def training_step(self, batch, i):
        x, y = batch
        return torch.nn.functional.mse_loss(self.net(x), y)
    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)

torch.manual_seed(0)
data = DataLoader(TensorDataset(torch.randn(640, 32), torch.randn(640, 1)), batch_size=32)
trainer = pl.Trainer(max_steps=20, devices=1, logger=False, enable_checkpointing=False,
                     enable_progress_bar=False, enable_model_summary=False,
                     callbacks=[dt.lightning_callback()])
trainer.fit(Tiny(), data)
print("global_step", trainer.global_step, "lightning", pl.__version__,
      "accelerator", type(trainer.accelerator).__name__)
"""


def framework(fig, label, module_names, code, layer_prefixes):
    need_python_face()
    version, cuda = torch_info()
    fig.update(torch=version, device="cuda" if cuda else "cpu")
    have = have_module(*module_names)
    if not have:
        raise Skip("%s not installed for %s" % (" or ".join(module_names), PY))
    d = os.path.join(A.work, label)
    os.makedirs(d, exist_ok=True)
    p = run(label, [PY, write("check_%s.py" % label, code)],  # not lightning.py: import lightning
            env_base(DFTRACE_ENABLE=1, DFTRACE_LOG_FILE=os.path.join(d, label)), 300, cwd=A.work)
    check_ok(p, label)
    fig["stdout"] = [l for l in p.stdout.splitlines() if l.startswith("global_step")]
    assert "global_step 20" in p.stdout, tail(p.stdout)
    evs = events(step_trace(d, label)[1])
    c = counts(evs)
    for name in ("step", "forward", "backward"):
        assert c.get(name) == 20, "%s: %s events, want 20 (%s)" % (name, c.get(name), c)
    opt = [e for e in evs if e["name"] == "step.optimizer"]
    assert len(opt) == 20 and not [e for e in opt if e["args"].get("skipped")], \
        "%d optimizer events, %d skipped" % (len(opt), sum(bool(e["args"].get("skipped")) for e in opt))
    layers = {k: v for k, v in c.items() if k.startswith("forward.")}
    fig["layers"] = len(layers)
    fig["layer_events_sample"] = dict(sorted(layers.items())[:6])
    for pre in layer_prefixes:
        mine = {k: v for k, v in layers.items() if k.startswith("forward." + pre)}
        assert mine and all(v == 20 for v in mine.values()), "layers %s: %s" % (pre, mine)
    back = {k: v for k, v in c.items() if k.startswith("backward.")}
    fig["backward_layers"] = len(back)
    assert back, "no backward.<layer> events"
    steps = [e for e in evs if e["name"] == "step"]
    for e in [e for e in evs if e["name"] in ("forward", "backward", "step.optimizer")]:
        assert any(s["ts"] <= e["ts"] and e["ts"] + e["dur"] <= s["ts"] + s["dur"] for s in steps), e


def check_huggingface(fig):
    framework(fig, "huggingface", ("transformers",), HF,
              ("transformer.h.0", "transformer.h.1"))


def check_lightning(fig):
    framework(fig, "lightning", ("lightning", "pytorch_lightning"), LIGHTNING, ("net.0", "net.2"))


# ---------------------------------------------------------------- timings

def check_overhead(fig):
    need_python_face()
    version, cuda = torch_info()
    fig.update(torch=version, device="cuda" if cuda else "cpu")
    rounds = 3 if cuda else 1
    steps, epochs = 300, 2
    # --no-io: the PyTorch hooks alone; its gap to `run --torch` is the I/O interposer's part
    arms = [("untraced", dict(traced=False, cupti=False)),
            ("run --torch", dict(run_opts=("--torch",), cupti=False)),
            ("run --torch --no-io", dict(run_opts=("--torch", "--no-io"), cupti=False)),
            ("run --torch --deep + CUPTI", dict(run_opts=("--torch", "--deep"), cupti=True))]
    times = {name: [] for name, _ in arms}
    for r in range(rounds):
        for name, kw in arms:
            p, _ = run_train("overhead", steps, epochs, 2, **kw)
            times[name].append(float(re.search(r"loop_seconds (\S+)", p.stdout).group(1)))
    fig["loop"] = "%d steps x %d epochs, MLP 64-256-256-10, batch 32, Adam, 2 DataLoader workers" % (
        steps, epochs)
    fig["seconds"] = times
    base = statistics.median(times["untraced"])
    for name, _ in arms[1:]:
        fig["ratio " + name] = round(statistics.median(times[name]) / base, 3)


def dlio(fig, workers):
    need_python_face()
    if have_module("torch") is None or have_module("numpy") is None:
        raise Skip("torch and numpy needed in %s" % PY)
    rounds = (5 if workers <= 2 else 3) if os.cpu_count() >= 8 else 1
    files = 4000 if os.cpu_count() >= 8 else 500
    bench = os.path.join(A.src, "bench", "io_dlio_bench.py")
    # With 2 workers, also the arms that tell the cost apart: no file traced (a process's
    # start, writer and finish) and no compression.
    parts = ["--no-files", "--uncompressed"] if workers == 2 else []
    p = run("dlio_%d" % workers, [PY, bench, A.build, "--workers", str(workers), "--rounds",
                                  str(rounds), "--files", str(files), *parts], env_base(), 240)
    check_ok(p, "io_dlio_bench.py")
    fig["command"] = "%s bench/io_dlio_bench.py BUILD --workers %d --rounds %d --files %d %s" % (
        os.path.basename(PY), workers, rounds, files, " ".join(parts))
    for what, arm, ratio in re.findall(r"^(wall|cpu): (no file traced|uncompressed) .*ratio to "
                                       r"untraced: median (\S+)", p.stdout, re.M):
        fig["%s_ratio_%s" % (what, arm.replace(" ", "_"))] = float(ratio)
    fig["output"] = [l for l in p.stdout.splitlines() if l.startswith(("round", "files", "wall", "cpu"))]
    m = re.search(r"^wall: traced .*ratio to untraced: median (\S+) \(min (\S+), max (\S+)\)",
                  p.stdout, re.M)
    assert m, tail(p.stdout)
    fig["wall_ratio_median"] = float(m.group(1))
    fig["wall_ratio_min_max"] = [float(m.group(2)), float(m.group(3))]
    m = re.search(r"^cpu: traced .*ratio to untraced: median (\S+)", p.stdout, re.M)
    if m:
        fig["cpu_ratio_median"] = float(m.group(1))
    fig["target"] = "wall ratio <= 1.03"
    fig["meets_target"] = fig["wall_ratio_median"] <= 1.03
    if workers == 2 and os.cpu_count() >= 8:  # the target, on a machine with cores to spare
        assert fig["meets_target"], "wall ratio %.3f > 1.03" % fig["wall_ratio_median"]


def check_dlio_2(fig):
    dlio(fig, 2)


def check_dlio_8(fig):
    dlio(fig, 8)


def check_gpu_translate(fig):
    raise Skip("needs no GPU and runs with the tests (ctest -R gpu_translate); GoogleTest and "
               "simdjson, which it needs, are not on the GPU machine")


def check_distributed(fig):
    """tests/python/test_torch_distributed.py and test_torch_torchrun.py (real gloo jobs) on
    this machine's torch."""
    need_python_face()
    version, _ = torch_info()
    fig["torch"] = version
    if not have_module("pytest"):
        raise Skip("pytest is not installed for %s" % PY)
    suites = [os.path.join(A.src, "tests", "python", n)
              for n in ("test_torch_distributed.py", "test_torch_torchrun.py")]
    env = env_base(DFTRACE_BUILD_DIR=A.build)
    p = run("distributed", [PY, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider",
                            "--basetemp", os.path.join(A.work, "dist-tmp"), *suites], env, 240,
            cwd=os.path.join(A.src, "tests", "python"))
    fig["result"] = tail(p.stdout, 3)
    check_ok(p, "distributed")


def check_analyze(fig):
    """`dftrace analyze` on the CUDA training trace (torch_deep's): the GPU's kernels in the
    compute layer, and no damage reported."""
    d = os.path.join(A.work, "torch_deep")
    files = sorted(glob.glob(os.path.join(d, "*.pfw*")))
    if not files:
        raise Skip("no torch_deep trace to analyse (that check did not run or wrote none)")
    p = run("analyze", [cli(), "analyze", "--json", *files], env_base(), 120)
    check_ok(p, "analyze")
    doc = json.loads(p.stdout)
    fig["inputs"] = doc.get("inputs", {}).get("events")
    groups = doc.get("groups", [])
    assert groups, "no group in the analysis"
    compute = max(g.get("union_ns", {}).get("compute", 0) for g in groups)
    fig["compute_union_ns"] = compute
    assert compute > 0, "no time in the compute layer"


# name, function, seconds it may take, phase (1: side by side, 2: alone, in order)
CHECKS = [
    ("torch_compile", check_torch_compile, 300, 1),
    ("torch_compile_io", check_torch_compile_io, 300, 1),
    ("torch_deep", check_torch_deep, 240, 1),
    ("huggingface", check_huggingface, 300, 1),
    ("cupti_program", check_cupti_program, 240, 1),
    ("lightning", check_lightning, 300, 1),
    ("torch_api", check_torch_api, 240, 1),
    ("gpu_no_device", check_gpu_no_device, 120, 1),
    ("gpu_translate", check_gpu_translate, 1, 1),
    ("distributed", check_distributed, 240, 1),
    ("analyze", check_analyze, 120, 2),
    ("dlio_2_workers", check_dlio_2, 120, 2),
    ("overhead", check_overhead, 200, 2),
    ("dlio_8_workers", check_dlio_8, 120, 2),
]


def one(name, fn, limit):
    fig = {}
    t0 = time.time()
    left = A.deadline - 25 - t0  # keep time to write the summary
    if A.only and name not in A.only:
        return dict(status="skipped", reason="not selected (GPU_CHECK_ONLY)", figures=fig, seconds=0)
    if A.build_status != "ok":
        return dict(status="skipped", reason="build: " + A.build_status, figures=fig, seconds=0)
    if left < 20:
        return dict(status="skipped", reason="out of time (the script's budget)", figures=fig, seconds=0)
    try:
        fn(fig)
        res = dict(status="passed", reason="")
    except Skip as e:
        res = dict(status="skipped", reason=str(e))
    except Exception as e:  # noqa: BLE001: a check's failure is its result
        res = dict(status="failed", reason="%s: %s" % (type(e).__name__, e))
        with open(os.path.join(A.work, "logs", name + ".log"), "a") as f:
            f.write(traceback.format_exc())
    res.update(figures=fig, seconds=round(time.time() - t0, 1))
    print("[%s] %s %s %s" % (name, res["status"], res["reason"][:300], json.dumps(fig)[:600]),
          flush=True)
    return res


def summarize(results):
    inv = open(os.path.join(A.out, "inventory.txt")).read() if os.path.exists(
        os.path.join(A.out, "inventory.txt")) else ""
    summary = {"build": A.build_status, "python": PY, "inventory": inv, "checks": results}
    with open(os.path.join(A.out, "summary.json"), "w") as f:
        json.dump(summary, f, indent=1, default=str)
    lines = ["# dftrace GPU check", "", "Build: " + A.build_status, "", "```", inv.strip(), "```", "",
             "| check | result | seconds | reason |", "| --- | --- | --- | --- |"]
    for name, r in results.items():
        lines.append("| %s | %s | %s | %s |" % (name, r["status"], r["seconds"],
                                                 r["reason"].replace("|", "/")[:400]))
    lines.append("")
    for name, r in results.items():
        if r["figures"]:
            lines += ["## " + name, "```", json.dumps(r["figures"], indent=1, default=str), "```"]
    with open(os.path.join(A.out, "summary.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    for what in ("traces", "logs"):
        src = os.path.join(A.work, what)
        if not os.path.isdir(src):
            continue
        if what == "logs":
            for extra in glob.glob(os.path.join(A.build, "CMakeFiles", "CMake*.log")):
                shutil.copy(extra, src)
        dst = os.path.join(A.out, what + ".tar.gz")
        with tarfile.open(dst, "w:gz") as t:
            t.add(src, arcname=what)
        if os.path.getsize(dst) > 15 * 2**20:  # the way back takes files of 16 MiB at most
            big = sorted(glob.glob(os.path.join(src, "**", "*.pfw*"), recursive=True),
                         key=os.path.getsize)
            while big and os.path.getsize(dst) > 15 * 2**20:
                os.remove(big.pop())
                with tarfile.open(dst, "w:gz") as t:
                    t.add(src, arcname=what)


def main():
    global A
    p = argparse.ArgumentParser()
    p.add_argument("--src", required=True)
    p.add_argument("--build", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--deadline", type=float, required=True)
    p.add_argument("--build-status", default="ok")
    p.add_argument("--only", default="")
    A = p.parse_args()
    A.only = {x for x in A.only.split(",") if x}
    for sub in ("logs", "traces"):
        os.makedirs(os.path.join(A.work, sub), exist_ok=True)
    results = {}
    first = [c for c in CHECKS if c[3] == 1]
    with concurrent.futures.ThreadPoolExecutor(max_workers=5) as pool:
        futs = {name: pool.submit(one, name, fn, limit) for name, fn, limit, _ in first}
        for name, _, _, _ in first:
            results[name] = futs[name].result()
    for name, fn, limit, _ in [c for c in CHECKS if c[3] == 2]:
        results[name] = one(name, fn, limit)
    summarize(results)
    print()
    print("%-16s %-8s %s" % ("check", "result", "reason / figures"))
    for name, r in results.items():
        key = {k: v for k, v in r["figures"].items() if k.startswith(("ratio", "wall_ratio", "kernels",
                                                                        "cpu_ratio", "meets"))}
        print("%-16s %-8s %s %s" % (name, r["status"], r["reason"][:160], json.dumps(key)[:300]))
    failed = [n for n, r in results.items() if r["status"] == "failed"]
    return 1 if failed or A.build_status != "ok" else 0


if __name__ == "__main__":
    sys.exit(main())
