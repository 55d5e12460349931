"""python_report.py: runs bench/python_overhead.py switched off and on, a few times each, and
prints a Markdown table of the best figures (ns per call above the plain code).

Run from the repository root after building:  /usr/bin/python3 bench/python_report.py [--cpu]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = [
    ("`@ai.compute.forward` call", "decorator_call", "baseline_call"),
    ("`@ai.compute.forward` method call", "decorator_method", "baseline_method"),
    ("`@ai.compute.forward` call, one argument", "decorator_call_x", "baseline_call_x"),
    ("`@ai.compute.forward(capture=[\"x\"], first=1)` call after the first",
     "capture_done_x", "baseline_call_x"),
    ("`@ai.compute.forward(capture=[\"x\"])` call captured (an int)", "capture_all_x",
     "baseline_call_x"),
    ("`with ai.compute.backward:`", "with", "baseline_loop"),
    ("`with ai.compute.backward(args={...}):`", "with_args", "baseline_loop"),
    ("one `ai.dataloader.fetch.iter()` item (2 events)", "iter_item", "baseline_range"),
]


def run(enabled, cpu, n, repeats):
    results = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory() as d:
            env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE", "DFTRACER"))}
            env.setdefault("PYTHONPATH", os.path.join(HERE, "..", "build", "bindings", "python"))
            if enabled:
                env.update(DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=os.path.join(d, "bench"))
            cmd = [sys.executable, os.path.join(HERE, "python_overhead.py"), "--json", "--n", str(n)]
            if cpu:
                cmd.append("--cpu")
            out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
            results.append(json.loads(out.strip().splitlines()[-1]))
    return {k: min(r[k] for r in results) for k in results[0] if k != "enabled"}


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cpu", action="store_true", help="thread CPU time instead of wall time")
    p.add_argument("--n", type=int, default=200000)
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    off = run(False, a.cpu, a.n, a.repeats)
    on = run(True, a.cpu, a.n, a.repeats)
    print(f"| style ({'thread CPU' if a.cpu else 'wall'} time, ns per call above the plain code) "
          "| off | on |")
    print("| --- | ---: | ---: |")
    for label, key, base in ROWS:
        print(f"| {label} | {off[key] - off[base]:.0f} | {on[key] - on[base]:.0f} |")
    print(f"| (plain call / loop iteration: {off['baseline_call']:.0f} / "
          f"{off['baseline_loop']:.0f} ns) | | |")


if __name__ == "__main__":
    main()
