#!/usr/bin/env python3
"""check_gpu_trace.py: runs the CUDA program (vector_add.cu) with gpu.cupti on and checks
that its kernel, copy, memset and sync events match the program in count, bytes and order,
are tied to their forward region, and fall in time inside it.
Exit 77 (skipped) when the program finds no usable GPU.
Usage: check_gpu_trace.py PROGRAM"""
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

ITERATIONS = 12
ELEMENTS = 1 << 20
# Clock conversion (two clocks read back to back) and microsecond rounding: a GPU event may
# appear this much outside its host region's edges.
SLACK_US = 5


def main():
    prog = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="dftrace-gpu-")
    try:
        trace = os.path.join(tmp, "gpu.pfw.gz")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE", "DFTRACER"))}
        env.update({"DFTRACE_ENABLE": "1", "DFTRACE_OUTPUT_FILE": trace, "DFTRACE_GPU_CUPTI": "1",
                    "DFTRACE_GPU_KINDS": "kernel,memcpy,memset,sync,runtime,driver"})
        p = subprocess.run([prog, str(ITERATIONS), str(ELEMENTS)], env=env, capture_output=True,
                           text=True, timeout=240)
        sys.stdout.write(p.stdout)
        sys.stderr.write(p.stderr)
        if p.returncode == 77:
            why = (p.stdout.strip().splitlines() or ["no usable GPU"])[-1]
            print("SKIPPED: " + (why[len("SKIP: "):] if why.startswith("SKIP: ") else why))
            return 77
        assert p.returncode == 0, f"program failed with {p.returncode}"
        assert not [l for l in p.stderr.splitlines() if l.startswith("dftrace:")], "dftrace complained"
        check(trace)
        print("ok")
        return 0
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def check(trace):
    with gzip.open(trace, "rt") as f:
        lines = f.read().splitlines()
    assert lines[0] == "[" and lines[-1] == "]"
    evs = [json.loads(l) for l in lines[1:-1]]
    x = [e for e in evs if e.get("ph") == "X"]
    forward = sorted((e for e in x if e["name"] == "forward" and e["cat"] == "compute"),
                     key=lambda e: e["ts"])
    assert len(forward) == ITERATIONS, f"{len(forward)} forward regions"
    by_id = {e["id"]: e for e in forward}
    gpu = sorted((e for e in x if e["cat"] == "device"), key=lambda e: (e["ts"], e["id"]))
    bytes_ = 4 * ELEMENTS

    # What each iteration issues, in order, on the default stream.
    want = [("memset", None, bytes_), ("transfer", "HtoD", bytes_), ("transfer", "HtoD", bytes_),
            ("kernel", None, None), ("transfer", "DtoD", bytes_), ("transfer", "DtoH", bytes_)]
    work = [e for e in gpu if e["name"] in ("memset", "transfer", "kernel")]
    assert len(work) == ITERATIONS * len(want), \
        f"{len(work)} GPU work events, want {ITERATIONS * len(want)}: " + \
        str([(e['name'], e['args'].get('kind')) for e in work[:12]])
    tracks = {e["tid"] for e in work}
    assert len(tracks) == 1, f"default-stream work on {len(tracks)} tracks"
    track = tracks.pop()
    assert track >= 1 << 30, track
    names = [e for e in evs if e.get("ph") == "M" and e["name"] == "thread_name" and e["tid"] == track]
    assert len(names) == 1 and names[0]["args"]["name"].startswith("GPU "), names

    for i, e in enumerate(work):
        name, kind, nbytes = want[i % len(want)]
        assert e["name"] == name, f"event {i}: {e['name']}, want {name}"
        if kind:
            assert e["args"]["kind"] == kind, f"event {i}: kind {e['args']['kind']}, want {kind}"
        if nbytes:
            assert e["args"]["bytes"] == nbytes, f"event {i}: {e['args']['bytes']} bytes"
        if name == "kernel":
            assert "vector_add" in e["args"]["kernel"], e["args"]["kernel"]
            assert e["args"]["grid"] == f"{(ELEMENTS + 255) // 256},1,1", e["args"]["grid"]
            assert e["args"]["block"] == "256,1,1", e["args"]["block"]
        # Tied to, and inside, the forward region of its iteration.
        region = forward[i // len(want)]
        assert e["args"].get("host_region") == region["id"], \
            f"event {i} ({name}): host_region {e['args'].get('host_region')}, want {region['id']}"
        assert region["id"] in by_id
        assert e["ts"] >= region["ts"] - SLACK_US, f"event {i} starts before its region"
        assert e["ts"] + e["dur"] <= region["ts"] + region["dur"] + SLACK_US, \
            f"event {i} ends after its region"

    # Each piece of GPU work has the API call that issued it (same correlation id).
    api = [e for e in x if e["cat"] == "cuda"]
    api_ids = {e["args"]["correlation_id"] for e in api}
    for e in work:
        assert e["args"]["correlation_id"] in api_ids, f"no API call for {e['name']} {e['args']}"
    launches = [e for e in api if e["name"] in ("cudaLaunchKernel", "cuLaunchKernel")]
    assert len([e for e in launches if e["name"] == "cudaLaunchKernel"]) == ITERATIONS, \
        f"{len(launches)} launch calls"
    syncs = [e for e in gpu if e["name"] == "sync" and e["args"]["type"] == "stream_synchronize"]
    assert len(syncs) == ITERATIONS, f"{len(syncs)} stream synchronisations"
    for i, e in enumerate(sorted(syncs, key=lambda e: e["ts"])):
        region = forward[i]
        assert e["args"].get("host_region") == region["id"], f"sync {i} not tied to its region"
        assert e["tid"] != track, "a sync shares the stream's track"
        assert region["ts"] - SLACK_US <= e["ts"] <= region["ts"] + region["dur"] + SLACK_US


if __name__ == "__main__":
    sys.exit(main())
