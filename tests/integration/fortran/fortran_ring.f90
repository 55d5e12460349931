! fortran_ring.f90: the flight recorder from Fortran (check_fortran_ring.py): regions in ring
! mode (the environment sets it), a trigger by dftrace_trigger after the 300th, a second one at
! once (within trigger.min_gap: not taken), a second of waiting (the full detail after the
! trigger ends), then more regions.
program fortran_ring
  use dftrace
  use iso_fortran_env, only: int64
  implicit none
  integer(dftrace_region_kind) :: r
  integer :: i
  integer(int64) :: t0, t, rate
  logical :: taken, again
  call dftrace_init(enable=.true.)
  do i = 1, 600
    r = dftrace_region_begin('compute.forward')
    call dftrace_region_arg(r, 'i', int(i, int64))
    call dftrace_region_end(r)
    if (i == 300) then
      call dftrace_trigger('from Fortran', taken)
      call dftrace_trigger('again', again)
      print '(a,l1,1x,l1)', 'taken ', taken, again
      call system_clock(t0, rate)
      t = t0
      do while (t - t0 < rate)
        call system_clock(t)
      end do
    end if
  end do
  call dftrace_finalize()
end program fortran_ring
