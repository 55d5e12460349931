"""test_install.py: the package installs without network, with CMake and with pip, and the
installed copy traces (finding libdftrace through its RPATH).

pip: `pip install REPOSITORY` in a fresh virtual environment (`python3 -m venv`, nothing
installed, no package index) builds the one wheel (pyproject.toml): libdftrace, the plug-ins,
the dftrace command, both extensions and every Python file. The installed copy then writes a
trace, its command traces a script's I/O with its own plug-in, and, with the system's packages
let in afterwards (pandas, torch), `dftrace.read` reads the trace and `dftrace run --torch`
traces a training loop, every time with the environment's own dftrace."""
import ast
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

BUILD = os.environ.get("DFTRACE_BUILD_DIR")
SOURCE = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", ".."))
needs_build = pytest.mark.skipif(not BUILD, reason="DFTRACE_BUILD_DIR (set by CTest) is not set")

PROGRAM = "from dftrace import ai\nwith ai.compute.forward:\n    pass\n"


def _traces_after_running(tmp_path, pythonpath):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DFTRACE", "PYTHONPATH"))}
    env.update(DFTRACE_ENABLE="1", DFTRACE_LOG_FILE=str(tmp_path / "t"), PYTHONPATH=pythonpath)
    p = subprocess.run([sys.executable, "-c", PROGRAM + "import dftrace; print(dftrace.__file__)"],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().startswith(pythonpath)  # the installed copy, not the build tree
    return glob.glob(str(tmp_path / "t-*.pfw.gz"))


def manifest_state():
    """Name, size and time of the build tree's install manifests (the user's record)."""
    return [(m, os.stat(m).st_size, os.stat(m).st_mtime_ns)
            for m in sorted(glob.glob(os.path.join(BUILD, "install_manifest*.txt")))]


@needs_build
def test_cmake_install(tmp_path):
    prefix = tmp_path / "prefix"
    before = manifest_state()
    # As `cmake --install --component python`, without touching the build tree's manifests.
    subprocess.run(["cmake", f"-DBUILD_DIR={BUILD}", f"-DPREFIX={prefix}",
                    f"-DWORK={tmp_path / 'install'}", "-DCOMPONENT=python", "-P",
                    os.path.join(SOURCE, "tests", "cmake", "install_tree.cmake")],
                   check=True, capture_output=True)
    assert manifest_state() == before
    # the library itself, as the library's own install rule puts it
    (prefix / "lib").mkdir(exist_ok=True)
    for lib in glob.glob(os.path.join(BUILD, "libdftrace.so*")):
        shutil.copy(lib, prefix / "lib", follow_symlinks=False)
    site = glob.glob(str(prefix / "lib" / "python3*" / "dist-packages"))
    assert len(site) == 1
    assert os.path.exists(os.path.join(site[0], "dftrace", "py.typed"))
    assert len(_traces_after_running(tmp_path, site[0])) == 1


# ---- pip install from the repository root into a fresh virtual environment

class Venv:
    def __init__(self, root):
        self.root = str(root)
        self.python = os.path.join(self.root, "bin", "python")
        self.command = os.path.join(self.root, "bin", "dftrace")
        self.site = os.path.join(self.root, "lib", "python%d.%d" % sys.version_info[:2],
                                 "site-packages")
        self.package = os.path.join(self.site, "dftrace")

    def env(self, **extra):
        """The environment without the build tree's package (CTest's PYTHONPATH) or dftrace's
        settings; with the build tree's libdftrace on LD_LIBRARY_PATH, where there is one, so
        that only the installed copy's RPATH can make it load its own."""
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("DFTRACE", "PYTHONPATH", "PIP_", "VIRTUAL_ENV"))}
        env["PATH"] = os.path.join(self.root, "bin") + os.pathsep + env.get("PATH", "")
        if BUILD and os.path.exists(os.path.join(BUILD, "libdftrace.so.0")):
            env["LD_LIBRARY_PATH"] = BUILD
        env.update(extra)
        return env

    def run(self, args, cwd, **extra):
        p = subprocess.run(args, env=self.env(**extra), cwd=str(cwd), capture_output=True,
                           text=True, timeout=300)
        assert p.returncode == 0, p.stdout + p.stderr
        return p

    def let_in_system_packages(self):
        """The same environment, now also seeing the system's site-packages (after its own)."""
        cfg = os.path.join(self.root, "pyvenv.cfg")
        with open(cfg) as f:
            lines = [ln for ln in f if not ln.startswith("include-system-site-packages")]
        with open(cfg, "w") as f:
            f.writelines(lines + ["include-system-site-packages = true\n"])


def _pip_build_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DFTRACE", "PYTHONPATH", "PIP_", "VIRTUAL_ENV"))}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", CMAKE_BUILD_PARALLEL_LEVEL="2")
    if shutil.which("ccache"):  # the build cache the project's builds share; no effect on results
        env.update(CMAKE_C_COMPILER_LAUNCHER="ccache", CMAKE_CXX_COMPILER_LAUNCHER="ccache",
                   CCACHE_BASEDIR=SOURCE)
    return env


@pytest.fixture(scope="module")
def venv(tmp_path_factory):
    if subprocess.run([sys.executable, "-c", "import ensurepip, venv"],
                      capture_output=True).returncode != 0:
        pytest.skip("python3 -m venv is not available (Debian: python3-venv)")
    if not shutil.which("cmake"):
        pytest.skip("cmake is not installed")
    v = Venv(tmp_path_factory.mktemp("venv") / "env")
    subprocess.run([sys.executable, "-m", "venv", v.root], check=True, capture_output=True)
    work = tmp_path_factory.mktemp("pip")
    # Fresh: nothing of dftrace, numpy or pandas is importable before the install.
    for mod in ("dftrace", "numpy", "pandas"):
        p = subprocess.run([v.python, "-c", "import " + mod], env=v.env(), cwd=str(work),
                           capture_output=True)
        assert p.returncode != 0, mod + " is importable in the fresh environment"
    # DFTRACE_TEST_WHEEL_BUILD_DIR (optional): a CMake build folder that pip's build keeps
    # between runs (the backend's build-dir setting), so that a rerun builds only what changed.
    keep = os.environ.get("DFTRACE_TEST_WHEEL_BUILD_DIR")
    settings = ["--config-settings", "build-dir=" + keep] if keep else []
    p = subprocess.run([v.python, "-m", "pip", "install", "-v"] + settings + [SOURCE],
                       env=_pip_build_env(), cwd=str(work), capture_output=True, text=True,
                       timeout=1800)
    assert p.returncode == 0, p.stdout[-6000:] + p.stderr[-6000:]
    return v


def test_wheel_holds_everything(venv):
    """The installed files (pip's RECORD): every file of the Python package, both extensions,
    libdftrace, the plug-ins and the command; no symbolic link anywhere."""
    (record,) = glob.glob(os.path.join(venv.site, "dftrace-*.dist-info", "RECORD"))
    with open(record) as f:
        installed = {ln.split(",")[0] for ln in f if ln.strip()}
    source = os.path.join(SOURCE, "bindings", "python", "dftrace")
    for top, dirs, files in os.walk(source):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith((".py", ".pyi")) or name == "py.typed":
                rel = os.path.relpath(os.path.join(top, name), os.path.dirname(source))
                assert rel in installed, rel
    for ext in ("_dftrace", "_reader"):
        assert glob.glob(os.path.join(venv.package, ext + ".cpython-*.so")), ext
    # what `dftrace run --torch` and dftrace.read need, named (not only through the walk above)
    for rel in ("dftrace/_autostart/sitecustomize.py", "dftrace/_read.py",
                "dftrace/torch/__init__.py"):
        assert rel in installed, rel
    expected = ["lib/libdftrace.so.0", "lib/libdftrace_io.so", "bin/dftrace"]
    # The optional plug-ins wherever this machine builds them (the CMake build tree says).
    if BUILD and os.path.exists(os.path.join(BUILD, "src", "plugins", "mpi", "libdftrace_mpi.so")):
        expected.append("lib/libdftrace_mpi.so")
    if BUILD and os.path.exists(os.path.join(BUILD, "libdftrace_cupti.so")):
        expected.append("lib/libdftrace_cupti.so")
    for rel in expected:
        assert os.path.isfile(os.path.join(venv.package, rel)), rel
    # the launcher on the environment's PATH (recorded relative to site-packages)
    assert venv.command in {os.path.normpath(os.path.join(venv.site, i)) for i in installed}
    for top, _, files in os.walk(venv.package):
        assert not [f for f in files if os.path.islink(os.path.join(top, f))], top
        # no compiled file points back into the sources or pip's build folder (dftrace-wheel-*)
        for f in files:
            with open(os.path.join(top, f), "rb") as data:
                content = data.read()
            if content.startswith(b"\x7fELF"):
                assert SOURCE.encode() not in content and b"dftrace-wheel-" not in content, f


TRACED = """
import sys, dftrace
from dftrace import ai
with ai.compute.forward:
    with open(sys.argv[1]) as f:
        f.read()
print("package", dftrace.__file__)
print("libraries", sorted({l.split()[-1] for l in open("/proc/self/maps") if "libdftrace" in l}))
print("start-up", getattr(sys.modules.get("sitecustomize"), "__file__", None))
print("python", sys.executable)
"""


def _said(stdout, key):
    return [ln.split(" ", 1)[1] for ln in stdout.splitlines() if ln.startswith(key + " ")][-1]


def _uses_the_venv(venv, stdout):
    assert _said(stdout, "package") == os.path.join(venv.package, "__init__.py"), stdout
    libraries = ast.literal_eval(_said(stdout, "libraries"))
    assert libraries and all(lib.startswith(venv.package + "/lib/") for lib in libraries), stdout
    return libraries


def test_fresh_venv_writes_a_trace(venv, tmp_path):
    (tmp_path / "prog.py").write_text(TRACED)
    p = venv.run([venv.python, "prog.py", "prog.py"], tmp_path, DFTRACE_ENABLE="1",
                 DFTRACE_LOG_FILE=str(tmp_path / "t"))
    assert os.path.join(venv.package, "lib", "libdftrace.so.0") in _uses_the_venv(venv, p.stdout)
    (trace,) = glob.glob(str(tmp_path / "t-*.pfw.gz"))
    # The environment's own command reads it.
    assert [e for e in _events(venv, trace, tmp_path)
            if e["name"] == "forward" and e["cat"] == "compute"]


def _events(venv, trace, cwd):
    """The trace's lines, as the environment's own command reads them."""
    out = venv.run(["dftrace", "cat", trace], cwd).stdout
    return [json.loads(ln) for ln in out.splitlines() if ln.strip()]


def test_fresh_venv_dftrace_run_traces_io(venv, tmp_path):
    """`dftrace run script.py` (the environment's command): its Python, its I/O plug-in."""
    (tmp_path / "prog.py").write_text(TRACED)
    (tmp_path / "data.txt").write_text("data\n")
    p = venv.run(["dftrace", "run", "--out", "out", "prog.py", "data.txt"], tmp_path)
    libraries = _uses_the_venv(venv, p.stdout)
    assert os.path.join(venv.package, "lib", "libdftrace_io.so") in libraries
    assert _said(p.stdout, "python") == venv.python
    (trace,) = glob.glob(str(tmp_path / "out" / "trace-*.pfw.gz"))
    events = _events(venv, trace, tmp_path)
    (fhash,) = [e["args"]["value"] for e in events
                if e["name"] == "FH" and e["args"]["name"] == str(tmp_path / "data.txt")]
    assert [e for e in events if e["cat"] in ("POSIX", "STDIO")
            and e["args"].get("fhash") == fhash], events


def _run_torch(venv, tmp_path, name, text):
    """`dftrace run --torch` of the script `text`, written as `name`, in the environment: the
    environment's own Python runs it, started by the start-up hook of the environment's package
    (not of the build tree or the system). Returns the finished process."""
    (tmp_path / name).write_text(text)
    p = venv.run(["dftrace", "run", "--torch", "--no-io", "--out", "out", name, name], tmp_path)
    _uses_the_venv(venv, p.stdout)
    assert _said(p.stdout, "start-up") == os.path.join(venv.package, "_autostart",
                                                       "sitecustomize.py"), p.stdout
    return p


def test_fresh_venv_dftrace_run_torch_starts_its_hook(venv, tmp_path):
    """`dftrace run --torch` in the fresh environment (no torch, no numpy): the start-up hook is
    the environment's, the script runs and is traced, and the summary, which needs numpy, says
    so in one line instead of failing."""
    p = _run_torch(venv, tmp_path, "prog.py", TRACED)
    assert "Traceback" not in p.stderr and "needs numpy" in p.stderr, p.stderr
    (trace,) = glob.glob(str(tmp_path / "out" / "trace-*.pfw.gz"))
    assert [e for e in _events(venv, trace, tmp_path) if e["name"] == "forward"]


@pytest.fixture(scope="module")
def venv_with_system(venv):
    """The same environment, seeing the system's pandas and torch after its own packages."""
    venv.let_in_system_packages()
    return venv


def _system_has(module):
    return subprocess.run([sys.executable, "-c", "import " + module], capture_output=True,
                          env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
                          ).returncode == 0


READ = TRACED + """
import dftrace, pandas
df = dftrace.read(sys.argv[2])
print("events", sorted(set(df["name"])))
print("pandas", pandas.__file__)
"""


def test_read_in_venv(venv_with_system, tmp_path):
    if not _system_has("pandas"):
        pytest.skip("pandas is not installed (Debian: python3-pandas)")
    venv = venv_with_system
    (tmp_path / "prog.py").write_text(TRACED)
    venv.run([venv.python, "prog.py", "prog.py"], tmp_path, DFTRACE_ENABLE="1",
             DFTRACE_LOG_FILE=str(tmp_path / "t"))
    (trace,) = glob.glob(str(tmp_path / "t-*.pfw.gz"))
    (tmp_path / "read.py").write_text(READ)
    p = venv.run([venv.python, "read.py", "read.py", trace], tmp_path)
    _uses_the_venv(venv, p.stdout)
    assert "forward" in ast.literal_eval(_said(p.stdout, "events")), p.stdout
    assert not _said(p.stdout, "pandas").startswith(venv.root)  # the system's pandas


TRAIN = TRACED + """
import torch
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
x, y = torch.randn(16, 4), torch.randn(16, 1)
for _ in range(3):
    torch.nn.functional.mse_loss(model(x), y).backward()
    opt.step()
    opt.zero_grad()
"""


def test_dftrace_run_torch_in_venv(venv_with_system, tmp_path):
    if not _system_has("torch"):
        pytest.skip("torch is not installed (Debian: python3-torch)")
    venv = venv_with_system
    p = _run_torch(venv, tmp_path, "train.py", TRAIN)
    assert "dftrace run: summary" in p.stderr and "steps 3 " in p.stderr, p.stderr
    (trace,) = glob.glob(str(tmp_path / "out" / "trace-*.pfw.gz"))
    names = [e["name"] for e in _events(venv, trace, tmp_path) if e["ph"] == "X"]
    # three steps; one more `forward`: the program's own ai.compute.forward
    for name, n in {"step": 3, "forward": 4, "backward": 3, "step.optimizer": 3}.items():
        assert names.count(name) == n, name
