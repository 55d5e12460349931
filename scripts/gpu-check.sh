#!/usr/bin/env bash
# gpu-check.sh: the whole check on a machine with an NVIDIA GPU, in one call (tests/README.md,
# "The GPU check"): an inventory, a build of what the checks need, then scripts/gpu_check.py,
# which runs each check with its own time limit and writes summary.md, summary.json,
# traces.tar.gz and logs.tar.gz under $OUT. Without a GPU (or without torch, transformers,
# lightning) each check that needs one is reported skipped, with the reason, and the rest run.
#
#   OUT=DIR bash scripts/gpu-check.sh            # default OUT: ./gpu-check-out
#
# Environment:
#   GPU_CHECK_DEPS     folder of unpacked Debian packages for a machine without them
#                      (yaml/ = libyaml-cpp0.7 + libyaml-cpp-dev, zlib/ = zlib1g + zlib1g-dev,
#                      isal/ = libisal2 + libisal-dev, each `dpkg -x`ed; default ../deps beside
#                      the source tree, if present)
#   GPU_CHECK_BUILD    build folder (default build-gpu in the source tree)
#   GPU_CHECK_PYTHON   the interpreter with torch (default /opt/torch/.venv/bin/python3, else
#                      python3 on PATH if it imports torch, else /usr/bin/python3)
#   GPU_CHECK_BUDGET_S seconds for the whole script, build included (default 420)
#   GPU_CHECK_ONLY     comma list of check names to run (the others are reported skipped)
#   GPU_CHECK_SIMULATE 1: build as the device would (the carried yaml-cpp and zlib, none of
#                      the system's ISA-L, libdeflate, hwloc), for a rehearsal elsewhere
set -u
START=$(date +%s)
SRC=$(cd "$(dirname "$0")/.." && pwd)
OUT=${OUT:-$SRC/gpu-check-out}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BUILD=${GPU_CHECK_BUILD:-$SRC/build-gpu}
BUDGET=${GPU_CHECK_BUDGET_S:-420}
DEPS=${GPU_CHECK_DEPS:-$SRC/../deps}
WORK=$(mktemp -d /tmp/dftrace-gpu-check.XXXXXX)
LOGS=$WORK/logs
mkdir -p "$LOGS"

if [ -n "${GPU_CHECK_PYTHON:-}" ]; then
  PY=$GPU_CHECK_PYTHON
elif [ -x /opt/torch/.venv/bin/python3 ]; then
  PY=/opt/torch/.venv/bin/python3
elif command -v python3 >/dev/null && python3 -c 'import torch' 2>/dev/null; then
  PY=$(command -v python3)
else
  PY=/usr/bin/python3
fi
export PATH=$(dirname "$PY"):$PATH:/usr/local/cuda/bin
NPROC=$(nproc)

# ---- inventory (into the summary by gpu_check.py)
{
  echo "## date"; date -u '+%Y-%m-%d %H:%M:%S UTC'
  echo "## uname"; uname -srm
  echo "## os"; (. /etc/os-release 2>/dev/null && echo "$PRETTY_NAME")
  echo "## cpus"; echo "$NPROC"
  echo "## nvidia-smi"
  nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>&1 || echo "no nvidia-smi"
  echo "## nvcc"; (nvcc --version 2>&1 | tail -2) || echo "no nvcc"
  echo "## gcc"; gcc --version 2>&1 | head -1
  echo "## cmake"; cmake --version 2>&1 | head -1
  echo "## ninja"; ninja --version 2>&1 || echo "no ninja"
  echo "## python"; echo "$PY"; "$PY" --version 2>&1
  echo "## python headers"
  "$PY" -c 'import sysconfig, os; p = os.path.join(sysconfig.get_paths()["include"], "Python.h"); print(p, "present" if os.path.exists(p) else "MISSING")' 2>&1
  echo "## packages"
  "$PY" - <<'EOF' 2>&1
import importlib
for name in ("torch", "transformers", "lightning", "pytorch_lightning", "numpy", "pandas"):
    try:
        m = importlib.import_module(name)
        print(name, getattr(m, "__version__", "?"))
    except Exception as e:
        print(name, "absent (%s)" % type(e).__name__)
try:
    import torch
    print("torch.cuda", torch.version.cuda, "available", torch.cuda.is_available(),
          torch.cuda.get_device_name(0) if torch.cuda.is_available() else "")
except Exception as e:
    print("torch.cuda ?", e)
EOF
  echo "## cupti"
  ls /usr/local/cuda/include/cupti.h /usr/local/cuda/extras/CUPTI/include/cupti.h 2>&1 | head -2
  ls /usr/local/cuda/lib64/libcupti.so* /usr/local/cuda/extras/CUPTI/lib64/libcupti.so* 2>/dev/null | head -2
  echo "## system libraries"
  for h in yaml-cpp/yaml.h zlib.h isa-l/igzip_lib.h libdeflate.h hwloc.h; do
    [ -e /usr/include/$h ] && echo "$h present" || echo "$h absent"
  done
} >"$OUT/inventory.txt" 2>&1
cat "$OUT/inventory.txt"

# ---- build: the library, libdftrace_io, libdftrace_cupti, the dftrace command, the Python
# face for $PY; then the two programs of tests/integration/gpu (nvcc, cc)
args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DDFTRACE_BUILD_BENCH=OFF -DDFTRACE_LTO=OFF
      -DDFTRACE_BUILD_TESTS=OFF -DDFTRACE_BUILD_EXAMPLES=OFF -DPython3_EXECUTABLE="$PY")
command -v ninja >/dev/null && args+=(-G Ninja)
if command -v ccache >/dev/null && [ -n "${CCACHE_DIR:-}" ]; then
  args+=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi
prefix=()
if [ -d "$DEPS/yaml/usr" ] && { [ ! -e /usr/include/yaml-cpp/yaml.h ] || [ "${GPU_CHECK_SIMULATE:-0}" = 1 ]; }; then
  DEPS=$(cd "$DEPS" && pwd)
  prefix+=("$DEPS/yaml/usr")
  args+=(-Dyaml-cpp_DIR="$DEPS/yaml/usr/lib/x86_64-linux-gnu/cmake/yaml-cpp")
  export LD_LIBRARY_PATH=$DEPS/yaml/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [ -d "$DEPS/zlib/usr" ] && { [ ! -e /usr/include/zlib.h ] || [ "${GPU_CHECK_SIMULATE:-0}" = 1 ]; }; then
  DEPS=$(cd "$DEPS" && pwd)
  zlib=$DEPS/zlib/usr/lib/x86_64-linux-gnu/libz.so
  [ -e /lib/x86_64-linux-gnu/libz.so.1 ] && zlib=/lib/x86_64-linux-gnu/libz.so.1  # the system's
  args+=(-DZLIB_INCLUDE_DIR="$DEPS/zlib/usr/include" -DZLIB_LIBRARY="$zlib")
fi
# ISA-L, the compressor of a Debian build (the device has none: zlib would stand in, several
# times slower, and the timed checks would measure that).
if [ -d "$DEPS/isal/usr" ] && { [ ! -e /usr/include/isa-l/igzip_lib.h ] || [ "${GPU_CHECK_SIMULATE:-0}" = 1 ]; }; then
  DEPS=$(cd "$DEPS" && pwd)
  args+=(-DISAL_INCLUDE_DIR="$DEPS/isal/usr/include"
         -DISAL_LIBRARY="$DEPS/isal/usr/lib/x86_64-linux-gnu/libisal.so")
  export LD_LIBRARY_PATH=$DEPS/isal/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
fi
if [ "${GPU_CHECK_SIMULATE:-0}" = 1 ]; then
  # The device has neither ISA-L, libdeflate nor hwloc: hide the system's (headers of /usr/include
  # are not found by find_*, pkg-config finds nothing) and its yaml-cpp package.
  args+=("-DCMAKE_IGNORE_PATH=/usr/include;/usr/lib/x86_64-linux-gnu/cmake/yaml-cpp")
  export PKG_CONFIG_LIBDIR=$WORK/no-pkgconfig
fi
[ ${#prefix[@]} -gt 0 ] && args+=("-DCMAKE_PREFIX_PATH=$(IFS=';'; echo "${prefix[*]}")")
# CUPTI where the toolkit keeps it, or where pip's nvidia-cuda-cupti put it.
if [ ! -e /usr/local/cuda/include/cupti.h ] && [ ! -e /usr/local/cuda/extras/CUPTI/include/cupti.h ]; then
  h=$("$PY" -c 'import glob, site; print(next(iter(glob.glob(site.getsitepackages()[0] + "/nvidia/**/include/cupti.h", recursive=True)), ""))' 2>/dev/null)
  if [ -n "$h" ]; then
    l=$(ls "$(dirname "$h")"/../lib/libcupti.so* 2>/dev/null | head -1)
    args+=(-DDFTRACE_CUPTI_INCLUDE_DIR="$(dirname "$h")" -DDFTRACE_CUPTI_LIBRARY="$l")
  fi
fi

build_status=ok
t0=$(date +%s)
if ! cmake -S "$SRC" -B "$BUILD" "${args[@]}" >"$LOGS/configure.log" 2>&1; then
  build_status="configure failed"
else
  targets=(dftrace dftrace_cli)
  for t in dftrace_io dftrace_cupti dftrace_python; do
    grep -q "^$t:\|^$t\b" <(cmake --build "$BUILD" --target help 2>/dev/null | sed 's/^[. ]*//') &&
      targets+=("$t")
  done
  cmake --build "$BUILD" -j"$NPROC" --target "${targets[@]}" >"$LOGS/build.log" 2>&1 ||
    build_status="build failed"
fi
NVCC=$(command -v nvcc || true)
if [ "$build_status" = ok ] && [ -n "$NVCC" ]; then
  "$NVCC" -O2 -std=c++17 -I"$SRC/include" "$SRC/tests/integration/gpu/vector_add.cu" \
    -o "$BUILD/gpu_vector_add" -L"$BUILD" -ldftrace -Xlinker -rpath -Xlinker "$BUILD" \
    >"$LOGS/nvcc.log" 2>&1 || echo "nvcc failed" >>"$LOGS/nvcc.log"
fi
if [ "$build_status" = ok ]; then
  cc -O2 -I"$SRC/include" "$SRC/tests/integration/gpu/no_device_program.c" \
    -o "$BUILD/gpu_no_device_program" -L"$BUILD" -ldftrace -Wl,-rpath,"$BUILD" \
    >"$LOGS/cc.log" 2>&1 || echo "cc failed" >>"$LOGS/cc.log"
fi
echo "build: $build_status in $(($(date +%s) - t0)) s (targets: ${targets[*]:-})"
tail -5 "$LOGS/build.log" 2>/dev/null

# ---- the checks
"$PY" "$SRC/scripts/gpu_check.py" --src "$SRC" --build "$BUILD" --out "$OUT" --work "$WORK" \
  --deadline $((START + BUDGET)) --build-status "$build_status" --only "${GPU_CHECK_ONLY:-}"
rc=$?
rm -rf "$WORK"
exit $rc
