"""setup.py: the compiled part of the pip build (the extension over libdftrace's C ABI).

DFTRACE_PREFIX names where include/dftrace/dftrace.h and lib/libdftrace.so are (an install
prefix); without it, the repository's include/ and build/ (a CMake build tree) are used
(DFTRACE_SOURCE_DIR and DFTRACE_BUILD_DIR name them when this folder is copied elsewhere)."""
import os

from setuptools import Extension, setup

here = os.path.dirname(os.path.abspath(__file__))
repo = os.environ.get("DFTRACE_SOURCE_DIR") or os.path.normpath(os.path.join(here, "..", ".."))
prefix = os.environ.get("DFTRACE_PREFIX")
if prefix:
    include_dir = os.path.join(prefix, "include")
    lib_dirs = [d for d in (os.path.join(prefix, "lib"), os.path.join(prefix, "lib64"))
                if os.path.isdir(d)] or [os.path.join(prefix, "lib")]
else:
    include_dir = os.path.join(repo, "include")
    lib_dirs = [os.environ.get("DFTRACE_BUILD_DIR", os.path.join(repo, "build"))]

setup(ext_modules=[Extension(
    "dftrace._dftrace",
    sources=["_dftrace.c"],
    include_dirs=[include_dir],
    library_dirs=lib_dirs,
    runtime_library_dirs=lib_dirs,
    libraries=["dftrace"],
    extra_compile_args=["-std=c11", "-fvisibility=hidden", "-Wall", "-Wextra"],
)])
