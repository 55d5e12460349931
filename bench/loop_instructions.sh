# loop_instructions.sh: sourced by nvtx_instructions.sh and ring_instructions.sh. The
# instructions per region of writer_prog many's loop on the calling thread (valgrind's
# callgrind, which other work on the machine does not change): the inclusive count of the loop
# for N1 and N2 regions, (I(N2) - I(N1)) / (N2 - N1), the first call's start-up cancelled. The
# writer's thread and finalize (which may format what the writer thread has not) are outside it.
# Needs $build (the build folder) and $me (the script's name, for its messages); sets $prog
# (writer_prog) and $tmp (a private folder, removed at exit).
prog=$build/tests/integration/core/writer_prog
[ -x "$prog" ] || { echo "$me: build the tests first (writer_prog)" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "$me: valgrind is missing" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n1=20000 n2=120000
loop_count() {  # loop_count N [COMMAND...]: instructions of one run's loop on the main thread;
  local n=$1    # COMMAND (e.g. `env -u X Y=1`) runs valgrind in the environment it sets
  shift
  rm -f "$tmp"/t*
  env DFTRACE_ENABLE=1 DFTRACE_LOG_FILE="$tmp/t" "$@" valgrind --tool=callgrind \
    --separate-threads=yes --callgrind-out-file="$tmp/cg" "$prog" many "$n" >/dev/null 2>&1
  callgrind_annotate --inclusive=yes "$tmp/cg-01" 2>/dev/null |
    awk '/::events\(int/ {gsub(",", "", $1); print $1; exit}'
  rm -f "$tmp"/cg*
}
per_region() {  # per_region [COMMAND...]
  local a b
  a=$(loop_count $n1 "$@")
  b=$(loop_count $n2 "$@")
  echo "scale=1; ($b - $a) / ($n2 - $n1)" | bc
}
