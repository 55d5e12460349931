! first_call.f90: a Fortran region as the process's first dftrace call (tracing enabled by the
! environment, no dftrace_init); finalized at exit. tests/integration/core/test_first_call.py checks it.
program first_call
  use dftrace
  implicit none
  integer(dftrace_region_kind) :: r
  integer :: i
  do i = 1, 3
    r = dftrace_region_begin('compute.forward')
    call dftrace_region_end(r)
  end do
end program first_call
