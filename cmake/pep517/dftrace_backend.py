"""dftrace_backend: the PEP 517 build backend of the dftrace wheel (pyproject.toml).

Plain Python and CMake, nothing from a package index: `pip install .` works offline in a fresh
virtual environment. The wheel is CMake's install of the whole project in its wheel layout
(`-DDFTRACE_PYTHON_WHEEL=ON`, cmake/wheel.cmake): the package `dftrace/` with its Python files,
both extensions, `lib/` (libdftrace and the plug-ins) and `bin/dftrace` (the command), plus the
launcher script `dftrace` (cmake/pep517/dftrace) that pip puts on the environment's PATH.

config_settings (pip: `--config-settings KEY=VALUE`): `build-dir` (a CMake build folder kept
between builds; default a temporary one), `build-type` (default Release), `cmake-args` (more
-D options, separated by spaces). CMake's own environment variables apply as usual
(CMAKE_BUILD_PARALLEL_LEVEL, CMAKE_GENERATOR, CMAKE_<LANG>_COMPILER_LAUNCHER).
"""
import base64
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import tomllib
import zipfile

__all__ = ["build_wheel", "build_sdist", "get_requires_for_build_wheel",
           "get_requires_for_build_sdist", "prepare_metadata_for_build_wheel"]

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
# Files of the staged package left out of the wheel: the C build description of the library,
# which names the development link (libdftrace.so) that a wheel can not hold.
_DEV_PREFIXES = ("dftrace/lib/cmake/", "dftrace/lib/pkgconfig/")


def _project():
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        project = tomllib.load(f)["project"]
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(\s*dftrace\s+VERSION\s+([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("dftrace_backend: no `project(dftrace VERSION x.y.z)` in CMakeLists.txt")
    return dict(project, version=m.group(1))


def _metadata(project):
    lines = ["Metadata-Version: 2.1", "Name: " + project["name"], "Version: " + project["version"],
             "Summary: " + project.get("description", ""),
             "Requires-Python: " + project.get("requires-python", ">=3")]
    if "license" in project:
        lines.append("License: " + project["license"].get("text", ""))
    for extra, reqs in sorted(project.get("optional-dependencies", {}).items()):
        lines.append("Provides-Extra: " + extra)
        lines += ['Requires-Dist: %s; extra == "%s"' % (r, extra) for r in reqs]
    body = ""
    if "readme" in project:
        lines.append("Description-Content-Type: text/markdown")
        with open(os.path.join(ROOT, project["readme"]), encoding="utf-8") as f:
            body = "\n" + f.read()
    return "\n".join(lines) + "\n" + body


def _tag():
    py = "cp%d%d" % sys.version_info[:2]
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return "%s-%s%s-%s" % (py, py, sys.abiflags, platform)


def _dist_info_files(project):
    wheel = ("Wheel-Version: 1.0\nGenerator: dftrace_backend\nRoot-Is-Purelib: false\n"
             "Tag: %s\n" % _tag())
    return {"METADATA": _metadata(project), "WHEEL": wheel}


def _dist_name(project):
    return "%s-%s" % (project["name"].replace("-", "_"), project["version"])


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    project = _project()
    dist_info = _dist_name(project) + ".dist-info"
    os.makedirs(os.path.join(metadata_directory, dist_info), exist_ok=True)
    for name, text in _dist_info_files(project).items():
        with open(os.path.join(metadata_directory, dist_info, name), "w", encoding="utf-8") as f:
            f.write(text)
    return dist_info


def _run(cmd):
    print("dftrace_backend: " + " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, stdout=sys.stderr)


def _cmake_build(build_dir, stage, config_settings):
    settings = config_settings or {}
    # The staged tree: site/ is what the wheel holds; headers and data go beside it, unshipped.
    configure = [
        "cmake", "-S", ROOT, "-B", build_dir,
        "-DCMAKE_BUILD_TYPE=" + settings.get("build-type", "Release"),
        "-DDFTRACE_PYTHON_WHEEL=ON", "-DDFTRACE_BUILD_TESTS=OFF", "-DDFTRACE_BUILD_BENCH=OFF",
        "-DDFTRACE_BUILD_EXAMPLES=OFF", "-DDFTRACE_BUILD_TOOLS=ON",
        "-DCMAKE_Fortran_COMPILER=NOTFOUND",  # the Fortran module is no part of the wheel
        "-DPython3_EXECUTABLE=" + sys.executable,
        "-DDFTRACE_PYTHON_INSTALL_DIR=site", "-DCMAKE_INSTALL_LIBDIR=site/dftrace/lib",
        "-DCMAKE_INSTALL_BINDIR=site/dftrace/bin", "-DCMAKE_INSTALL_INCLUDEDIR=include",
        "-DCMAKE_INSTALL_DATADIR=share",
    ] + settings.get("cmake-args", "").split()
    _run(configure)
    build = ["cmake", "--build", build_dir]
    if not os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL"):
        build += ["-j", str(os.cpu_count() or 1)]
    _run(build)
    _run(["cmake", "--install", build_dir, "--prefix", stage, "--strip"])


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return "%s,sha256=%s,%d" % (arcname, digest, len(data))


def _add(zf, records, arcname, data, mode=0o644):
    info = zipfile.ZipInfo(arcname, date_time=(1980, 1, 1, 0, 0, 0))
    info.external_attr = (0o100000 | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)
    records.append(_record_line(arcname, data))


def _staged_files(site):
    """(arcname, path) of each regular file of the staged package. A wheel holds no links:
    cmake/wheel.cmake makes every library the loader asks for a file of its own, so the links
    CMake installs beside them (development names) are left out."""
    out = []
    for top, dirs, files in os.walk(site):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(top, name)
            arc = os.path.relpath(path, site).replace(os.sep, "/")
            if os.path.islink(path) or arc.startswith(_DEV_PREFIXES) or "__pycache__" in arc:
                continue
            out.append((arc, path))
    return out


def _check(arcnames):
    need = ["dftrace/__init__.py", "dftrace/_autostart/sitecustomize.py", "dftrace/_read.py",
            "dftrace/torch/__init__.py", "dftrace/bin/dftrace",
            "dftrace/lib/libdftrace.so.0", "dftrace/lib/libdftrace_io.so"]
    missing = [n for n in need if n not in arcnames]
    for ext in ("_dftrace", "_reader", "_analysis"):
        if not any(re.fullmatch(r"dftrace/%s\..*\.so" % ext, n) for n in arcnames):
            missing.append("dftrace/%s.<abi>.so" % ext)
    if missing:
        raise RuntimeError("dftrace_backend: the build did not produce " + ", ".join(missing))


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = _project()
    dist = _dist_name(project)
    settings = config_settings or {}
    work = tempfile.mkdtemp(prefix="dftrace-wheel-")
    try:
        build_dir = settings.get("build-dir") or os.path.join(work, "build")
        stage = os.path.join(work, "stage")
        _cmake_build(os.path.abspath(build_dir), stage, settings)
        files = _staged_files(os.path.join(stage, "site"))
        _check({a for a, _ in files})
        wheel_name = "%s-%s.whl" % (dist, _tag())
        records = []
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel_name), "w") as zf:
            for arc, path in files:
                with open(path, "rb") as f:
                    _add(zf, records, arc, f.read(), os.stat(path).st_mode & 0o777)
            with open(os.path.join(ROOT, "cmake", "pep517", "dftrace"), "rb") as f:
                _add(zf, records, dist + ".data/scripts/dftrace", f.read(), 0o755)
            for name, text in _dist_info_files(project).items():
                _add(zf, records, "%s.dist-info/%s" % (dist, name), text.encode())
            record = "%s.dist-info/RECORD" % dist
            zf.writestr(zipfile.ZipInfo(record, date_time=(1980, 1, 1, 0, 0, 0)),
                        "\n".join(records + [record + ",,"]) + "\n")
        return wheel_name
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _source_files():
    """The files of the source tree: git's list in a checkout, else everything but builds."""
    try:
        out = subprocess.run(["git", "-C", ROOT, "ls-files", "-z"], check=True,
                             capture_output=True).stdout
        return [f for f in out.decode().split("\0") if f and os.path.isfile(os.path.join(ROOT, f))]
    except (OSError, subprocess.CalledProcessError):
        files = []
        for top, dirs, names in os.walk(ROOT):
            dirs[:] = sorted(d for d in dirs
                             if not d.startswith((".", "build")) and d != "__pycache__")
            files += [os.path.relpath(os.path.join(top, n), ROOT) for n in sorted(names)]
        return files


def build_sdist(sdist_directory, config_settings=None):
    project = _project()
    dist = _dist_name(project)
    name = dist + ".tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz", format=tarfile.PAX_FORMAT) as tf:
        for rel in _source_files():
            tf.add(os.path.join(ROOT, rel), arcname=dist + "/" + rel, recursive=False)
        data = _metadata(project).encode()
        info = tarfile.TarInfo(dist + "/PKG-INFO")
        info.size = len(data)
        tf.addfile(info, io.BytesIO(data))
    return name
