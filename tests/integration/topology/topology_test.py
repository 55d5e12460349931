#!/usr/bin/python3
"""topology_test.py: runs affinity_probe under real bindings (taskset, mpirun --bind-to core,
ranks forced onto one CPU) and checks that the trace records the affinity that was set.

Scenarios (first argument):
  taskset    taskset -c <last cpu> probe <first cpu>: PR core_affinity, numa_node, package and
             host counts as the machine has them; the main thread's and the worker thread's
             thread_name lines carry their own CPU sets.
  unbound    no binding: core_affinity lists every online CPU; thread_name has no CPU set.
  mpi_bind   mpirun -np 2 --bind-to core: each rank's recorded CPUs are what the rank itself
             sees, one core each, different cores, no affinity_warning.
  overlap    mpirun -np 2 --bind-to none taskset -c 0: both ranks on CPU 0, each writes an
             affinity_warning naming the other.
  fake_host  hwloc reads two_numa_gpu.xml (HWLOC_XMLFILE) instead of this machine: 4 CPUs on 2
             NUMA nodes and a GPU on node 1; the probe, run on CPUs 0-1, spans both nodes: PR
             numa_node/package/host counts from that host, affinity_warning, gpu_numa.
"""
import argparse
import glob
import os
import re
import subprocess
import sys
import tempfile

SKIP = 77


sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from tracecheck import check, fail, pr_values as pr_lines, read_objects as read_trace  # noqa: E402


def thread_lines(ev):
    return {e["tid"]: e["args"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}


def run(cmd, env_extra):
    env = dict(os.environ)
    env.update(env_extra)
    p = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    if p.returncode != 0:
        print(p.stdout, p.stderr)
        fail("command failed (%d): %s" % (p.returncode, " ".join(cmd)))
    return p.stdout


def printed_cpus(stdout):
    """{rank: [cpus]} from the probe's 'main rank=R cpus=a,b' lines."""
    out = {}
    for m in re.finditer(r"^main rank=(-?\d+) cpus=([\d,]*)$", stdout, re.M):
        out[int(m.group(1))] = [int(c) for c in m.group(2).split(",") if c]
    return out


def machine():
    """What the machine has, read from sysfs rather than through hwloc."""
    nodes = sorted(glob.glob("/sys/devices/system/node/node[0-9]*")) or ["node0"]
    cores = set()
    for c in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/topology"):
        try:
            pkg = open(os.path.join(c, "physical_package_id")).read().strip()
            core = open(os.path.join(c, "core_id")).read().strip()
            cores.add((pkg, core))
        except OSError:
            pass
    return {"numa": len(nodes), "cores": len(cores), "pus": os.cpu_count()}


def single_file(outdir):
    files = glob.glob(os.path.join(outdir, "*.pfw.gz"))
    check(len(files) == 1, "expected one trace file, found %s" % files)
    return read_trace(files[0])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario", choices=["taskset", "unbound", "mpi_bind", "overlap", "fake_host"])
    ap.add_argument("--probe", required=True)
    ap.add_argument("--hwloc", type=int, default=1, help="1 when the build has hwloc")
    ap.add_argument("--xml", help="two_numa_gpu.xml (fake_host)")
    a = ap.parse_args()
    outdir = tempfile.mkdtemp(prefix="dftrace-topo-")
    env = {"DFTRACE_ENABLE": "1", "DFTRACE_LOG_FILE": os.path.join(outdir, "t")}
    ncpu = os.cpu_count()
    allowed = sorted(os.sched_getaffinity(0))
    if a.scenario in ("taskset", "mpi_bind", "fake_host") and len(allowed) < 2:
        print("SKIPPED: needs at least 2 CPUs this process may use (has %s)" % allowed)
        sys.exit(SKIP)
    if a.scenario == "taskset":
        main_cpu, worker_cpu = allowed[-1], allowed[0]
        out = run(["taskset", "-c", str(main_cpu), a.probe, str(worker_cpu)], env)
        check(printed_cpus(out).get(-1) == [main_cpu], "taskset did not bind the probe: " + out)
        ev = single_file(outdir)
        pr, warnings = pr_lines(ev)
        check(pr.get("core_affinity") == [main_cpu], "core_affinity %r, taskset set [%d]" % (pr.get("core_affinity"), main_cpu))
        threads = thread_lines(ev)
        pid = ev[0]["pid"]
        check(threads.get(pid, {}).get("core_affinity") == [main_cpu],
              "main thread_name %r lacks core_affinity [%d]" % (threads.get(pid), main_cpu))
        workers = [v for t, v in threads.items() if t != pid]
        check(len(workers) == 1 and workers[0].get("core_affinity") == [worker_cpu],
              "worker thread_name %r, bound to [%d]" % (workers, worker_cpu))
        if a.hwloc:
            m = machine()
            check(pr.get("host_pus") == m["pus"], "host_pus %r, sysfs says %d" % (pr.get("host_pus"), m["pus"]))
            check(pr.get("host_cores") == m["cores"], "host_cores %r, sysfs says %d" % (pr.get("host_cores"), m["cores"]))
            check(pr.get("host_numa_nodes") == m["numa"], "host_numa_nodes %r, sysfs says %d" % (pr.get("host_numa_nodes"), m["numa"]))
            node_of = None
            for n in glob.glob("/sys/devices/system/node/node[0-9]*"):
                if os.path.exists(os.path.join(n, "cpu%d" % main_cpu)):
                    node_of = int(n.rsplit("node", 1)[1])
            check(pr.get("numa_node") == [node_of if node_of is not None else 0],
                  "numa_node %r, CPU %d is on node %r" % (pr.get("numa_node"), main_cpu, node_of))
            pkg = int(open("/sys/devices/system/cpu/cpu%d/topology/physical_package_id" % main_cpu).read())
            check(pr.get("package") == [pkg], "package %r, CPU %d is in package %d" % (pr.get("package"), main_cpu, pkg))
            check(not warnings, "unexpected affinity_warning %s" % warnings)
    elif a.scenario == "fake_host":
        if not a.hwloc:
            print("SKIPPED: built without hwloc")
            sys.exit(SKIP)
        env["HWLOC_XMLFILE"] = a.xml
        run(["taskset", "-c", "0,1", a.probe, "-1"], env)
        ev = single_file(outdir)
        pr, warnings = pr_lines(ev)
        check(pr.get("core_affinity") == [0, 1], "core_affinity %r" % pr.get("core_affinity"))
        for k, v in (("numa_node", [0, 1]), ("package", [0, 1]), ("host_cores", 4), ("host_pus", 4),
                     ("host_numa_nodes", 2), ("host_packages", 2)):
            check(pr.get(k) == v, "%s %r, the fake host gives %r" % (k, pr.get(k), v))
        check(len(warnings) == 1 and "span NUMA nodes 0,1" in warnings[0], "affinity_warning %r" % warnings)
        check(pr.get("gpu_numa") == [{"name": "cuda0", "pci": "0000:81:00.0", "numa_node": [1]}],
              "gpu_numa %r" % pr.get("gpu_numa"))
    elif a.scenario == "unbound":
        if len(allowed) != ncpu:
            print("SKIPPED: this process is already bound to %s" % allowed)
            sys.exit(SKIP)
        run([a.probe, "-1"], env)
        ev = single_file(outdir)
        pr, warnings = pr_lines(ev)
        check(pr.get("core_affinity") == list(range(ncpu)), "core_affinity %r, expected all %d CPUs" % (pr.get("core_affinity"), ncpu))
        for t, v in thread_lines(ev).items():
            check("core_affinity" not in v, "unbound thread %d has core_affinity %r" % (t, v))
        check(not warnings, "unexpected affinity_warning %s" % warnings)
    elif a.scenario in ("mpi_bind", "overlap"):
        mpirun = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "2"]
        if a.scenario == "mpi_bind":
            cmd = mpirun + ["--bind-to", "core", "--map-by", "core", a.probe, "-1"]
        else:
            cmd = mpirun + ["--bind-to", "none", "taskset", "-c", str(allowed[0]), a.probe, "-1"]
        out = run(cmd, env)
        seen = printed_cpus(out)
        check(sorted(seen) == [0, 1], "probe output: " + out)
        files = sorted(glob.glob(os.path.join(outdir, "*.pfw.gz")))
        check(len(files) == 2, "expected 2 trace files, found %s" % files)
        recorded = {}
        for f in files:
            ev = read_trace(f)
            pr, warnings = pr_lines(ev)
            r = pr.get("rank")
            recorded[r] = (pr.get("core_affinity"), warnings)
            check(pr.get("core_affinity") == seen[r], "rank %r: core_affinity %r, the rank sees %r" % (r, pr.get("core_affinity"), seen[r]))
            pid = ev[0]["pid"]
            check(thread_lines(ev).get(pid, {}).get("core_affinity") == seen[r],
                  "rank %r: main thread_name lacks its CPU set %r" % (r, seen[r]))
        if a.scenario == "mpi_bind":
            for r in (0, 1):
                check(len(seen[r]) == 1 or len(seen[r]) < ncpu, "rank %d not bound: %r" % (r, seen[r]))
                check(not recorded[r][1], "rank %d: unexpected affinity_warning %s" % (r, recorded[r][1]))
            check(not set(seen[0]) & set(seen[1]), "--bind-to core gave overlapping CPUs %r" % seen)
        else:
            for r in (0, 1):
                check(seen[r] == [allowed[0]], "taskset did not bind rank %d: %r" % (r, seen[r]))
                w = recorded[r][1]
                check(len(w) == 1 and ("rank(s) %d" % (1 - r)) in w[0] and ("CPUs %d" % allowed[0]) in w[0],
                      "rank %d: affinity_warning %r should name rank %d and CPU %d" % (r, w, 1 - r, allowed[0]))
    print("ok: " + a.scenario)
    subprocess.run(["rm", "-rf", outdir])


if __name__ == "__main__":
    main()
