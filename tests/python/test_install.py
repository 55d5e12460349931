"""test_install.py: the package installs without network, with CMake and with pip, and the
installed copy traces (finding libdftrace through its RPATH)."""
import glob
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


@needs_build
def test_pip_install_offline(tmp_path):
    src = tmp_path / "src"
    shutil.copytree(os.path.join(SOURCE, "bindings", "python"), src,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = tmp_path / "site"
    env = dict(os.environ, DFTRACE_BUILD_DIR=BUILD, PIP_NO_INDEX="1",
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    env.pop("DFTRACE_PREFIX", None)
    env["DFTRACE_SOURCE_DIR"] = SOURCE  # the copy is outside the repository
    p = subprocess.run([sys.executable, "-m", "pip", "install", "--no-build-isolation",
                        "--no-deps", "--target", str(target), str(src)],
                       env=env, capture_output=True, text=True, timeout=600,
                       cwd=str(tmp_path))
    if p.returncode != 0 and "No module named pip" in p.stderr:
        pytest.skip("pip is not installed")
    assert p.returncode == 0, p.stdout + p.stderr
    assert len(_traces_after_running(tmp_path, str(target))) == 1
