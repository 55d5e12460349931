#!/usr/bin/env bash
# under-load.sh CMD...: runs CMD with every core kept busy by other processes (one spinning
# process per core, at normal priority), so that tests which compare times are checked on a
# loaded machine. Exits with CMD's status; the load processes are stopped when CMD ends.
# UNDER_LOAD_PROCS=K: K load processes instead of one per core.
set -uo pipefail
[ $# -gt 0 ] || { echo "usage: scripts/under-load.sh CMD [ARGS...]" >&2; exit 2; }
procs=${UNDER_LOAD_PROCS:-$(nproc)}
pids=()
stop() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
}
trap stop EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$procs"); do
  # A busy loop that also touches memory now and then (a loaded machine, not only a busy ALU).
  bash -c 'x=0; while :; do x=$(( (x * 1103515245 + 12345) % 2147483648 )); done' &
  pids+=($!)
done
echo "under-load: $procs load processes (pids ${pids[*]}) on $(nproc) cores" >&2
"$@"
rc=$?
stop
trap - EXIT
exit $rc
