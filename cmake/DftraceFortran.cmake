# DftraceFortran.cmake: dftrace_enable_fortran(<what is not built>), the one check for a Fortran
# compiler of the folders that build Fortran (bindings/fortran, examples/mixed, tests).
include(CheckLanguage)

# Enables Fortran in the calling folder, or says what is not built and returns from that folder's
# CMakeLists.txt when there is no Fortran compiler; a test folder names its test as a second
# argument, which is then registered as skipped with the reason (dftrace_missing_test). A macro, not a function: enable_language()
# must run at file scope, and return() then leaves the caller's file.
macro(dftrace_enable_fortran what_is_not_built)
  check_language(Fortran)
  if(NOT CMAKE_Fortran_COMPILER)
    message(STATUS "dftrace: no Fortran compiler found; ${what_is_not_built}")
    if(${ARGC} GREATER 1)
      dftrace_missing_test(${ARGV1} "no Fortran compiler (gfortran)")
    endif()
    return()
  endif()
  enable_language(Fortran)
endmacro()
