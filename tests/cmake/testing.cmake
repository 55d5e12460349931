# testing.cmake: how tests are registered so that ctest tells the truth about skips.
#
# - dftrace_add_pytest(): a pytest suite run through run_pytest.py: a suite that passes with a
#   skipped case exits 77 and ctest reports it "Skipped" (SKIP_RETURN_CODE), never "Passed".
# - Scripts that can skip print 'SKIPPED: <reason>' and exit 77 (same property); GoogleTest's
#   GTEST_SKIP() is reported by gtest_discover_tests' own SKIP_REGULAR_EXPRESSION.
# - CTestCustom.cmake runs report_skips.py after every ctest run, which prints each skipped
#   test's reason below ctest's "The following tests did not run" list.

# Debian's interpreter: the one that has pytest (another python3 may come first on PATH).
find_program(SYSTEM_PYTHON NAMES python3 PATHS /usr/bin NO_DEFAULT_PATH)
set(DFTRACE_TEST_PYTHON ${SYSTEM_PYTHON} CACHE FILEPATH "Python with pytest for the tests (Debian's)")
set(DFTRACE_SKIP_STATUS 77)
set(_dftrace_testing_dir ${CMAKE_CURRENT_LIST_DIR})

configure_file(${_dftrace_testing_dir}/CTestCustom.cmake.in ${PROJECT_BINARY_DIR}/CTestCustom.cmake @ONLY)

# dftrace_add_pytest(NAME <test> SUITE <file.py> [PYTHON <interpreter>] [WORKING_DIRECTORY <dir>]
#                    [TIMEOUT <s>] [ENVIRONMENT <VAR=value>...] [LABELS <label>...]
#                    [RESOURCE_LOCK <lock>...] [ARGS <pytest argument>...])
function(dftrace_add_pytest)
  cmake_parse_arguments(T "" "NAME;SUITE;PYTHON;WORKING_DIRECTORY;TIMEOUT"
                        "ENVIRONMENT;LABELS;RESOURCE_LOCK;ARGS" ${ARGN})
  if(NOT T_PYTHON)
    set(T_PYTHON ${DFTRACE_TEST_PYTHON})
  endif()
  if(NOT T_WORKING_DIRECTORY)
    set(T_WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  endif()
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 600)
  endif()
  add_test(NAME ${T_NAME}
    COMMAND ${T_PYTHON} ${_dftrace_testing_dir}/run_pytest.py -q -p no:cacheprovider -rs
            ${T_ARGS} ${T_SUITE}
    WORKING_DIRECTORY ${T_WORKING_DIRECTORY})
  set_tests_properties(${T_NAME} PROPERTIES SKIP_RETURN_CODE ${DFTRACE_SKIP_STATUS}
                       TIMEOUT ${T_TIMEOUT})
  # PYTHONDONTWRITEBYTECODE: no __pycache__ in the source tree.
  set(_env PYTHONDONTWRITEBYTECODE=1 ${T_ENVIRONMENT})
  set_tests_properties(${T_NAME} PROPERTIES ENVIRONMENT "${_env}")
  if(T_LABELS)
    set_tests_properties(${T_NAME} PROPERTIES LABELS "${T_LABELS}")
  endif()
  if(T_RESOURCE_LOCK)
    set_tests_properties(${T_NAME} PROPERTIES RESOURCE_LOCK "${T_RESOURCE_LOCK}")
  endif()
endfunction()

# dftrace_missing_test(<test> <reason>): a test that can not be built here (a dependency is
# missing) is still registered, and reports itself Skipped with the reason, instead of being
# silently absent from ctest's list.
function(dftrace_missing_test name reason)
  message(STATUS "dftrace: ${name} is skipped: ${reason}")
  add_test(NAME ${name} COMMAND sh -c "echo 'SKIPPED: ${reason}'; exit ${DFTRACE_SKIP_STATUS}")
  set_tests_properties(${name} PROPERTIES SKIP_RETURN_CODE ${DFTRACE_SKIP_STATUS})
endfunction()

# dftrace_require_checker_python(<test>): the trace checkers need only Python's standard library;
# reuse the interpreter the Python face found, or find one. Without one, <test> is registered as
# skipped with the reason and the calling CMakeLists.txt stops here (a macro: return() is the
# caller's).
macro(dftrace_require_checker_python test)
  if(NOT Python3_EXECUTABLE)
    find_package(Python3 COMPONENTS Interpreter)
  endif()
  if(NOT Python3_EXECUTABLE)
    dftrace_missing_test(${test} "no Python interpreter for the trace checker")
    return()
  endif()
endmacro()
