#!/usr/bin/env bash
# sanitize.sh: the core's tests under AddressSanitizer+UndefinedBehaviorSanitizer and under
# ThreadSanitizer (unit tests, the writer and tree integration tests, the DFTracer drop-in, the
# I/O interposers),
# and the dftrace tools on hostile trace files under AddressSanitizer+UBSan.
# Called by scripts/test.sh; usable alone: scripts/sanitize.sh [address,undefined|thread]...
# The ThreadSanitizer build compiles no standalone fence (GCC used to warn three times
# "'atomic_thread_fence' is not supported with '-fsanitize=thread'"): the tree's seqlock uses
# acquire loads and release stores of its words instead (src/tree/tree.hpp).
set -euo pipefail
cd "$(dirname "$0")/.."
src=$PWD
py=/usr/bin/python3
kinds=("$@")
[ ${#kinds[@]} -gt 0 ] || kinds=("address,undefined" "thread")
for kind in "${kinds[@]}"; do
  dir=build-sanitize-${kind//,/-}
  echo "== sanitizer build: $kind ($dir)"
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DDFTRACE_SANITIZE="$kind" -DDFTRACE_BUILD_BENCH=OFF >/dev/null
  extra=(dftrace_cli dftrace_io io_prog io_prog_app dftracer_io io_threads table_prog signal_io_prog
         fptr_table_prog)  # I/O tracing
  [ "$kind" = thread ] || extra+=(gen_trace train_loop nested_ns)  # the tools (ASan+UBSan)
  cmake --build "$dir" -j"$(nproc)" --target unit_tests schedule_share_test writer_prog tree_prog node_start_stop schedule_fork c_program first_call first_call_c \
    dftracer_app_c dftracer_app_cpp "${extra[@]}" >/dev/null
  # A fatal-signal test needs the signal to reach dftrace's handler, not the sanitizer's.
  export ASAN_OPTIONS=handle_segv=0:handle_abort=0:detect_leaks=1:abort_on_error=0
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
  # (TSan: the fork test starts the child's writer thread after fork, which TSan refuses by default.)
  export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:handle_segv=0:handle_abort=0:die_after_fork=0
  "$dir/tests/unit/unit_tests" --gtest_brief=1
  # The schedule's follower thread, which otherwise runs only in forked children.
  "$dir/tests/unit/schedule_share_test" --gtest_brief=1
  deselect=()
  if [ "$kind" = thread ]; then
    # ThreadSanitizer does not support starting threads in the child of a multi-threaded
    # fork (it reports "dup thread with used id"); the fork test runs in the other builds.
    echo "   (thread: test_fork_* and test_c_node_start_and_stop skipped: ThreadSanitizer can not follow threads started after fork)"
    deselect=(-k "not fork and not c_node_start_and_stop")  # (node_start_stop forks too)
  else
    # GCC 12's AddressSanitizer does not hold its own allocator's lock across fork: a child
    # forked while another thread allocates can hang inside ASan (seen: the child's new thread
    # waits in SizeClassAllocator64::GetFromAllocator, 2 of 160 forks), whatever dftrace does,
    # and LeakSanitizer counts the parent's other threads' memory as the exiting child's leak.
    # The fork-from-16-threads test runs in the release build (scripts/test.sh).
    echo "   ($kind: test_fork_from_16_threads skipped: ASan's allocator can hang a child forked from threads)"
    # The schedule-following child starts its follower and writer threads in a child forked
    # from the writer's threads: one CI run timed out there under ASan (not reproduced in 22
    # runs alone, idle or loaded; no stack kept); it runs in the release build.
    echo "   ($kind: test_forked_child_follows_the_parents_schedule skipped: a child forked from threads timed out once under ASan, not yet understood)"
    deselect=(-k "not fork_from_16_threads and not forked_child_follows_the_parents_schedule")
  fi
  # The first-call test's Python and Fortran cases need those faces, which this build leaves out
  # (the release build runs them); its C and C++ cases run here.
  echo "   ($kind: test_first_call's python and fortran cases skipped: those faces are not built with sanitizers)"
  deselect[1]="${deselect[1]} and not [python- and not [fortran-"
  for t in core dftracer_compat; do
    DFTRACE_TEST_BIN="$PWD/$dir/tests/integration/$t" $py -m pytest -q -p no:cacheprovider "${deselect[@]}" \
      "$src/tests/integration/$t"
  done
  # I/O tracing: the interposers preloaded into sanitized programs (io_prog, 8 threads at once)
  # and bound by programs that initialise dftrace (the application mode's GOT rewriting), with
  # their own configuration read while preloaded. Programs of the system (cp, tar, python3)
  # can not take a sanitized library: those tests run in the release build.
  echo "   ($kind: I/O tests on the system's programs skipped: a sanitized library can not be preloaded into them)"
  io_tests="application_mode or dftracer_annotated_cpp"
  # A child forked from a process with a writer thread and leaving with _exit: ASan's allocator
  # can hang such a child and ThreadSanitizer can not follow its new thread (as above); it runs
  # in the release build.
  echo "   ($kind: test_application_mode_child_leaving_with_exit skipped: a child forked from threads)"
  io_skip=" and not leaving_with_exit"
  if [ "$kind" = thread ]; then
    # ThreadSanitizer's runtime must come before any preloaded library (it is not initialised
    # when a library preloaded ahead of it makes its first call): the preloaded cases run under
    # ASan+UBSan, the application mode (no preloading) here.
    echo "   (thread: the preloaded I/O tests skipped: ThreadSanitizer's runtime must be the first library)"
  else
    io_tests="$io_tests or posix_and_stdio or eight_threads or preloaded_and_initialising or data_dirs_limit"
    io_tests="$io_tests or descriptor_table or signal_handler_io"
    # Under ASan, a run of the _exit-from-a-handler test sometimes leaves no trace (seen twice
    # on CI, cause not yet found; 60 runs pass locally); it runs in the release build.
    echo "   ($kind: test_exit_from_a_signal_handler_that_interrupted_the_allocator skipped: under ASan a run sometimes leaves no trace, not yet understood)"
  fi
  # (preloaded before the program's own ASan runtime, which is loaded all the same: ASan's check
  # of the order is off for these.)
  ASAN_OPTIONS="$ASAN_OPTIONS:verify_asan_link_order=0" \
    DFTRACE_TEST_BIN="$PWD/$dir/tests/integration/io" DFTRACE_CLI="$PWD/$dir/tools/dftrace" \
    $py -m pytest -q -p no:cacheprovider -k "($io_tests)$io_skip" "$src/tests/integration/io/test_io.py"
  if [ "$kind" != thread ]; then
    # Hostile trace files (forged DT fields, a deflate bomb, odd numbers, absurd clock
    # offsets) through every tool built with the sanitizers; the streaming merge and split and
    # the time units too.
    DFTRACE_CLI="$PWD/$dir/tools/dftrace" DFTRACE_GEN_TRACE="$PWD/$dir/tests/tools/gen_trace" \
      DFTRACE_TRAIN_LOOP="$PWD/$dir/examples/train_loop" \
      DFTRACE_NESTED_NS="$PWD/$dir/tests/tools/nested_ns" \
      DFTRACE_NO_PROGRESS=1 $py -m pytest -q -p no:cacheprovider "$src/tests/tools/test_hostile.py" \
      "$src/tests/tools/test_validate_span.py" "$src/tests/tools/test_merge_split.py" \
      "$src/tests/tools/test_time_ns.py"
  fi
done
echo "sanitizers: all passed"
