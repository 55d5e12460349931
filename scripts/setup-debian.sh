#!/usr/bin/env bash
# setup-debian.sh: installs the Debian 12 packages dftrace needs, only those missing.
# Usage: scripts/setup-debian.sh [core|test]   (core: build and demo; test: everything the
# test suite runs: MPI, hwloc, Fortran, Python, PyTorch).
set -euo pipefail
set_name=${1:-core}

core=(build-essential cmake pkg-config zlib1g-dev libyaml-cpp-dev libisal-dev libdeflate-dev
      libgtest-dev libbenchmark-dev python3)
test=("${core[@]}" python3-dev python3-pytest python3-numpy python3-pandas python3-dask
      python3-distributed pybind11-dev python3-pybind11
      gfortran libopenmpi-dev openmpi-bin python3-mpi4py libhwloc-dev hwloc libsimdjson-dev
      jq python3-torch python3-pip python3-setuptools
      mpich libmpich-dev  # MPI 4.0's MPI_Comm_idup_with_info beside OpenMPI 4.1 (tests/integration/mpi)
      python3-venv  # pip install of the repository into a fresh venv (tests/python/test_install.py)
      python3-matplotlib  # dftrace report (its plots as SVG)
      libhdf5-dev  # HDF5 I/O traced (libdftrace_io H5 events) and tested
      clang-14 libclang-rt-14-dev libfuzzer-14-dev  # the fuzz targets (scripts/fuzz.sh)
      clang-format-14  # the `format` test (scripts/format.sh --check)
      chromium nodejs  # the browser tests (tests/browser: a viewer from npm in chromium)
      strace  # tests/integration/life: what a traced process opens and connects to
      tmux  # dftrace watch checked in a real terminal
      git sqlite3 tar gzip findutils make rsync)  # the battery of real programs (tests/integration/battery)
case "$set_name" in
  core) want=("${core[@]}") ;;
  test) want=("${test[@]}") ;;
  *) echo "usage: $0 [core|test]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
  [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
done
# npm: Debian's package, unless the installed nodejs already brings it (NodeSource's does, and
# conflicts with Debian's npm).
if [ "$set_name" = test ] && ! command -v npm >/dev/null; then missing+=(npm); fi
[ ${#missing[@]} -eq 0 ] && exit 0

# One line says what is installed; apt's own output goes to a log, shown only if it fails.
log=$(mktemp -t dftrace-apt.XXXXXX)
echo "dftrace setup: installing ${#missing[@]} Debian package(s) with apt-get (may take minutes; log $log): ${missing[*]}"
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
if ! { $sudo apt-get update -qq && \
       $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$log" 2>&1; then
  cat "$log" >&2
  echo "dftrace setup: apt-get failed (log above, also in $log)" >&2
  exit 1
fi
rm -f "$log"
