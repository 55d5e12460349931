# test_diff_report.py: `dftrace report --compare` compares in its own process, from the one read
# of the new run it makes for the report: its comparison must be the document of
# `dftrace diff --json --allow-damaged` for the same runs, on runs with steps, without (names
# whose durations are spilled), with a damaged file, and with the base given as a directory or
# a comma-separated list.
import json
import shutil

from conftest import need, run
from test_diff import make_run, random_run


def report_doc(base, new_dir):
    """The comparison as `dftrace report --compare base new_dir` makes it: the new run read
    once, with its DataFrame and analysis partial, then compared."""
    need("pandas")
    from dftrace import _read, report_analysis
    files = _read.trace_files(str(new_dir))
    _, partial, names = _read.read_with_partial(files, ["ret"], names=True)
    return report_analysis.diff(base, files, partial, names)


def command_doc(base, new_dir, env=None):
    p = run("diff", base, new_dir, "--json", "--allow-damaged", check=False, env=env)
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def test_steps_and_names_equal_the_command(tmp_path):
    make_run(tmp_path / "base", 100_000, 100)
    make_run(tmp_path / "new", 110_000, 300, extra=True, reads=(100, 5000, 70000))
    got = report_doc(str(tmp_path / "base"), tmp_path / "new")
    assert got == command_doc(tmp_path / "base", tmp_path / "new")
    assert got["metrics"]["step.count"]["new"] == 40 and got["appeared"] == ["app/extra"]
    assert got["metrics"]["step.p50"]["change"] > 0


def test_spilled_durations_without_steps_equal_the_command(tmp_path, monkeypatch):
    """No step events; a spill budget of 8 events, so that both the report's read and the
    command spill the names' durations and select their p50 and p99 from the file."""
    random_run(tmp_path / "base", 1, 100)
    random_run(tmp_path / "new", 2, 200)
    monkeypatch.setenv("DFTRACE_ANALYZE_SPILL_EVENTS", "8")
    got = report_doc(str(tmp_path / "base"), tmp_path / "new")
    assert got == command_doc(tmp_path / "base", tmp_path / "new")
    assert got["metrics"]["step.count"]["new"] == 0 and len(got["names"]) >= 5
    monkeypatch.setenv("DFTRACE_ANALYZE_SPILL_EVENTS", "0")
    assert report_doc(str(tmp_path / "base"), tmp_path / "new") == got


def test_damaged_files_and_base_forms_equal_the_command(tmp_path):
    """A file cut short in each run (read as far as it goes, --allow-damaged); the base as a
    directory and as a comma-separated list of its files."""
    for name, pid in (("base", 100), ("new", 300)):
        procs = make_run(tmp_path / name, 100_000 + pid, pid)
        path = tmp_path / name / f"t-{procs[1].pid}.pfw.gz"
        data = path.read_bytes()
        path.write_bytes(data[: len(data) * 2 // 3])
    want = command_doc(tmp_path / "base", tmp_path / "new")
    assert want["base"]["events"] < 2 * 40 * 2 + 4  # the damage is real: events were lost
    assert report_doc(str(tmp_path / "base"), tmp_path / "new") == want
    listed = ",".join(sorted(str(p) for p in (tmp_path / "base").iterdir()))
    assert report_doc(listed, tmp_path / "new") == want
    shutil.rmtree(tmp_path / "base")
    try:
        report_doc(str(tmp_path / "base"), tmp_path / "new")
    except (ValueError, FileNotFoundError):
        pass
    else:
        raise AssertionError("a missing base run was compared")


def test_names_collected_only_when_compared_and_checked(tmp_path):
    """The report without --compare collects no name durations (its read is unchanged); figures
    that are not a run's names bytes are refused."""
    need("pandas")
    from dftrace import _analysis, _read, _reader
    make_run(tmp_path / "run", 100_000, 100)
    files = _read.trace_files(str(tmp_path / "run"))
    plain = _reader.read_with_analysis(files, [], 1, None, None)
    assert plain[2] == b"" and len(_read.read_with_partial(files, [])) == 2
    _, partial, names = _read.read_with_partial(files, [], names=True)
    assert names and names != plain[2]
    for bad in (b"", names[:-1], partial):
        try:
            _analysis.diff(files, files, partial, bad, None, None, 1)
        except ValueError:
            continue
        raise AssertionError("malformed name figures were accepted")
