! consumer.f90: the README's example program, built against an installed dftrace with pkg-config by check_install.py.
program consumer
  use dftrace
  implicit none
  character(len=4096) :: out
  integer(dftrace_region_kind) :: r
  integer :: it, st
  call get_command_argument(1, out)
  call dftrace_init(enable=.true., output_file=out, status=st)
  if (st /= dftrace_ok) error stop 'init failed'
  do it = 1, 3
    call dftrace_update('ai', 'step', it)
    r = dftrace_region_begin('compute.forward')
    call dftrace_region_arg(r, 'layer', 3)
    call dftrace_region_end(r)
    call dftrace_counter('compute', 'residual', 1.0d-3 / it)
  end do
  call dftrace_finalize()
end program consumer
