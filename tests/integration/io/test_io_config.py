"""test_io_config.py: libdftrace_io, preloaded, reads its rules (io.data_dir, io.exclude) from
the effective configuration key by key (dftrace_config_get), so a value is used exactly as it
was set, whatever text it holds."""
import glob
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
import tracecheck as tc  # noqa: E402

CLI = os.environ["DFTRACE_CLI"]


def opened_files(tmp_path, targets, env_extra):
    out = tmp_path / "traces"
    out.mkdir(exist_ok=True)
    for f in glob.glob(str(out / "*")):
        os.unlink(f)
    script = tmp_path / "touch.py"
    script.write_text("import sys\nfor p in sys.argv[1:]:\n    open(p, 'w').write('x')\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE_", "DFTRACER_"))}
    env.pop("LD_PRELOAD", None)
    env.update(env_extra)
    p = subprocess.run([CLI, "run", "--prefix", str(out / "t"), "--", "/usr/bin/python3",
                        str(script), *map(str, targets)],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stdout + p.stderr
    ev = tc.load_checked(tc.only_file(str(out)))
    names = {e["args"]["value"]: e["args"]["name"] for e in ev if e.get("name") == "FH"}
    return {names[e["args"]["fhash"]] for e in ev
            if e.get("cat") == "POSIX" and e.get("ph") == "X" and e["name"] == "open64"}


def test_rules_whose_directory_names_hold_a_line_of_the_configuration_text(tmp_path):
    """A directory whose name holds a newline, another key's "name = " and what
    dftrace_config_describe writes after a value ("  (env ...)"): as an exclusion (read by the
    preloaded library itself: no data directory), its files are left out and the others traced;
    as the data directory, its files are traced and only they."""
    data = tmp_path / "d\nio.exclude = x  (env X)"
    data.mkdir()
    other = tmp_path / "d"
    other.mkdir()
    targets = [data / "a.txt", other / "b.txt"]
    wanted = set(map(str, targets))
    assert opened_files(tmp_path, targets, {"DFTRACE_IO_EXCLUDE": f"{data}:*.py"}) & wanted == \
        {str(targets[1])}
    assert opened_files(tmp_path, targets, {"DFTRACE_IO_DATA_DIR": str(data)}) & wanted == \
        {str(targets[0])}
