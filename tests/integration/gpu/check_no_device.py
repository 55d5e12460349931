#!/usr/bin/env python3
"""check_no_device.py: with gpu.cupti on and no usable GPU (or no GPU component), tracing
goes on and exactly one 'dftrace:' line says why; with a GPU it says nothing.
Usage: check_no_device.py PROGRAM LIBDFTRACE"""
import ctypes
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile


def gpu_present():
    """True when a CUDA driver loads and sees at least one device."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return cuda.cuInit(0) == 0 and cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and count.value > 0


def run(prog, trace, extra_env):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE", "DFTRACER"))}
    env.update({"DFTRACE_ENABLE": "1", "DFTRACE_OUTPUT_FILE": trace})
    env.update(extra_env)
    p = subprocess.run([prog], env=env, capture_output=True, text=True, timeout=60)
    return p


def events(trace):
    with gzip.open(trace, "rt") as f:
        text = f.read()
    lines = text.splitlines()
    assert lines[0] == "[" and lines[-1] == "]", "trace is not closed"
    out = []
    for line in lines[1:-1]:
        out.append(json.loads(line))
    return out


def check_trace(trace, label):
    evs = events(trace)
    forward = [e for e in evs if e.get("ph") == "X" and e["name"] == "forward"]
    assert len(forward) == 5, f"{label}: {len(forward)} forward events, want 5"
    assert any(e["name"] == "end" for e in evs), f"{label}: no end event"
    dev = [e for e in evs if e.get("cat") in ("device", "cuda")]
    assert not dev, f"{label}: GPU events without a GPU: {dev[:2]}"


def gpu_lines(stderr):
    return [l for l in stderr.splitlines() if l.startswith("dftrace:") and "gpu" in l.lower()]


def main():
    prog, libdftrace = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="dftrace-gpu-nodev-")
    try:
        have_gpu = gpu_present()
        component = os.path.exists(os.path.join(os.path.dirname(libdftrace), "libdftrace_cupti.so"))
        yaml_file = os.path.join(tmp, "gpu.yaml")
        with open(yaml_file, "w") as f:
            f.write("gpu:\n  cupti: true\n  kinds: [kernel, memcpy]\n")
        # 1. gpu.cupti on, from the environment and from a YAML file.
        for label, env in (("env", {"DFTRACE_GPU_CUPTI": "1"}), ("yaml", {"DFTRACE_CONFIG": yaml_file})):
            trace = os.path.join(tmp, f"{label}.pfw.gz")
            p = run(prog, trace, env)
            assert p.returncode == 0, f"{label}: exit {p.returncode}: {p.stderr}"
            assert "done traced" in p.stdout, p.stdout
            assert "gpu.cupti = true" in p.stdout, p.stdout
            if label == "yaml":  # a YAML list reaches the component as a comma list
                assert "gpu.kinds = kernel,memcpy  (yaml" in p.stdout, p.stdout
            lines = gpu_lines(p.stderr)
            if have_gpu and component:
                assert not lines, f"{label}: unexpected GPU message with a GPU present: {lines}"
            else:
                assert len(lines) == 1, f"{label}: want one GPU line, got {lines!r} (stderr {p.stderr!r})"
                assert "tracing goes on without GPU events" in lines[0], lines[0]
                print(f"{label}: {lines[0]}")
            check_trace(trace, label)
        # 2. gpu.cupti off (the default): not a word about GPUs.
        trace = os.path.join(tmp, "off.pfw.gz")
        p = run(prog, trace, {})
        assert p.returncode == 0 and not gpu_lines(p.stderr), p.stderr
        check_trace(trace, "off")
        # 3. the component is missing (a libdftrace.so with nothing beside it).
        libdir = os.path.join(tmp, "lib")
        os.mkdir(libdir)
        real = os.path.realpath(libdftrace)
        shutil.copy(real, os.path.join(libdir, "libdftrace.so.0"))
        trace = os.path.join(tmp, "missing.pfw.gz")
        p = run(prog, trace, {"DFTRACE_GPU_CUPTI": "1", "LD_LIBRARY_PATH": libdir})
        assert p.returncode == 0, p.stderr
        # With a GPU present, the missing hwloc component has its own line (the topology
        # falls back to sysfs): it names hwloc, and the GPU line is the one about CUPTI.
        lines = [l for l in gpu_lines(p.stderr) if "libdftrace_hwloc" not in l]
        hwloc = [l for l in gpu_lines(p.stderr) if "libdftrace_hwloc" in l]
        assert len(hwloc) <= 1 and all("cannot open" in l for l in hwloc), hwloc
        assert len(lines) == 1 and "could not be loaded" in lines[0], f"missing component: {lines!r}"
        print(f"missing: {lines[0]}")
        check_trace(trace, "missing")
        print("ok" + (" (GPU present)" if have_gpu else " (no GPU)"))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
