! nvtx_prog.f90: the same regions through the Fortran module.
program nvtx_prog
  use dftrace
  implicit none
  character(len=4096) :: out
  integer :: st, i
  integer(dftrace_region_kind) :: s, f, b

  call get_command_argument(1, out)
  call dftrace_init(enable=.true., output_file=out, status=st)
  if (st /= dftrace_ok) stop 1
  do i = 1, 2
    s = dftrace_region_begin('compute.step')
    f = dftrace_region_begin('compute.forward')
    call dftrace_instant('app.marker')
    call dftrace_region_end(f)
    b = dftrace_region_begin('compute.backward')
    call dftrace_region_end(b)
    call dftrace_region_end(s)
  end do
  call dftrace_finalize(st)
  if (st /= dftrace_ok) stop 2
end program nvtx_prog
