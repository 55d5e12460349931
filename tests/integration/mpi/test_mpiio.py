"""test_mpiio.py: MPI-IO of a program built with plain MPI (no dftrace), 4 ranks writing one
shared file, traced by `dftrace run --mpi` (libdftrace_mpi's MPIIO events, libdftrace_io's
POSIX calls underneath, one trace per rank), then read by the tools."""
import collections
import glob
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

PROG = os.environ["DFTRACE_MPIIO_PROG"]
CLI = os.environ["DFTRACE_CLI"]
MPIRUN = ["mpirun", "--oversubscribe", "--allow-run-as-root", "-np", "4"]


def test_four_ranks_write_one_shared_file(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    out = tmp_path / "traces"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([CLI, "run", "--mpi", "--prefix", str(out / "t"), "--data-dirs", str(data),
                        "--", *MPIRUN, PROG, str(data)],
                       capture_output=True, text=True, env=env, timeout=150)
    assert p.returncode == 0 and "mpiio_prog: ok" in p.stdout, p.stdout + p.stderr
    shared = str(data / "shared.bin")
    ranks = {}
    for f in glob.glob(str(out / "t-mpiio_prog-*.pfw.gz")):
        ev = tc.load_checked(f)
        rank = {e["args"]["value"] for e in ev if e.get("name") == "PR" and e["args"]["name"] == "rank"}
        assert len(rank) == 1, f
        ranks[int(rank.pop())] = ev
    assert sorted(ranks) == [0, 1, 2, 3]
    for rank, ev in ranks.items():
        names = {e["args"]["value"]: e["args"]["name"] for e in ev if e.get("name") == "FH"}
        mpiio = [e for e in ev if e.get("cat") == "MPIIO" and e.get("ph") == "X"]
        assert [e["name"] for e in mpiio] == [
            "MPI_File_open", "MPI_File_write_at_all", "MPI_File_seek", "MPI_File_write",
            "MPI_File_sync", "MPI_File_read_at_all", "MPI_File_close"], rank
        assert {names[e["args"]["fhash"]] for e in mpiio} == {shared}
        assert all(e["args"]["ret"] == 0 for e in mpiio)
        by = {e["name"]: e for e in mpiio}
        block = 1 << 16
        assert by["MPI_File_write_at_all"]["args"]["offset"] == rank * 2 * block
        assert by["MPI_File_write_at_all"]["args"]["bytes"] == block
        assert by["MPI_File_write"]["args"]["bytes"] == block  # block/4 ints
        assert by["MPI_File_read_at_all"]["args"]["bytes"] == block
        # MPI's own POSIX calls on the file nest inside the MPIIO events: the independent
        # write is this rank's pwrite of its second block, the sync its fsync.
        posix = [e for e in ev if e.get("cat") == "POSIX" and e.get("ph") == "X"
                 and names.get(e["args"].get("fhash")) == shared]
        inside = collections.defaultdict(list)
        for e in posix:
            inside[e["args"]["p_idx"]].append(e)
        writes = inside[by["MPI_File_write"]["id"]]
        assert [(e["name"], e["args"]["offset"], e["args"]["ret"]) for e in writes] == \
            [("pwrite", rank * 2 * block + block, block)]
        assert [e["name"] for e in inside[by["MPI_File_sync"]["id"]]] == ["fsync"]
    # the collective writes reached the file: every rank's two blocks
    assert os.path.getsize(shared) == 8 * (1 << 16)
    # the tools: merge the ranks, and stat counts every MPIIO call of the 4
    merged = tmp_path / "merged.pfw.gz"
    files = sorted(glob.glob(str(out / "t-mpiio_prog-*.pfw.gz")))
    assert subprocess.run([CLI, "merge", "-o", str(merged), *files], capture_output=True,
                          timeout=60).returncode == 0
    st = json.loads(subprocess.run([CLI, "stat", "--json", str(merged)], capture_output=True,
                                   text=True, timeout=60).stdout)
    counts = {(r["cat"], r["name"]): r["count"] for r in st["by_name"]}
    assert counts[("MPIIO", "MPI_File_write_at_all")] == 4
    assert counts[("MPIIO", "MPI_File_open")] == 4


def test_a_file_opened_through_dots_is_named_by_its_normalised_absolute_path(tmp_path):
    """MPI_File_open of a name that goes through "./x/.." from the data directory: the FH line
    names the file as libdftrace_io names it, absolute and normalised, so both plug-ins' events
    share its hash."""
    data = tmp_path / "data"
    (data / "x").mkdir(parents=True)
    out = tmp_path / "traces"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    env.pop("LD_PRELOAD", None)
    p = subprocess.run([CLI, "run", "--mpi", "--prefix", str(out / "t"), "--data-dirs", str(data),
                        "--", *MPIRUN[:-1], "1", PROG, "./x/.."],
                       capture_output=True, text=True, env=env, timeout=150, cwd=data)
    assert p.returncode == 0 and "mpiio_prog: ok" in p.stdout, p.stdout + p.stderr
    [trace] = glob.glob(str(out / "t-mpiio_prog-*.pfw.gz"))
    ev = tc.load_checked(trace)
    names = {e["args"]["value"]: e["args"]["name"] for e in ev if e.get("name") == "FH"}
    opened = [e for e in ev if e.get("cat") == "MPIIO" and e.get("name") == "MPI_File_open"]
    assert len(opened) == 1
    assert names[opened[0]["args"]["fhash"]] == str(data / "shared.bin")
    # the POSIX open underneath names the same file by the same hash
    posix = [e for e in ev if e.get("cat") == "POSIX" and e["args"].get("fhash") ==
             opened[0]["args"]["fhash"]]
    assert posix, "libdftrace_io's events on the file carry the MPI-IO open's hash"
