! fortran_threads.f90: Fortran regions from OpenMP threads; check_fortran_threads.py checks that each thread nests on its own.
!
! Usage: fortran_threads <output file>. Four threads each run 50 "sweep" regions (a handle)
! with a "cell" region inside (a path, so the first uses race to create the node).
program fortran_threads
  use dftrace
  use omp_lib
  implicit none
  character(len=4096) :: out
  integer :: st, i
  integer(dftrace_region_kind) :: r1, r2
  type(dftrace_node) :: sweep

  call get_command_argument(1, out)
  call dftrace_init(enable=.true., output_file=out, status=st)
  if (st /= dftrace_ok) error stop 'init failed'
  sweep = dftrace_node('solver.sweep')
  !$omp parallel num_threads(4) private(i, r1, r2)
  call dftrace_thread_name('worker')
  do i = 1, 50
    r1 = dftrace_region_begin(sweep)
    call dftrace_region_arg(r1, 'thread', omp_get_thread_num())
    call dftrace_region_arg(r1, 'i', i)
    r2 = dftrace_region_begin('solver.sweep.cell')
    call dftrace_region_arg(r2, 'thread', omp_get_thread_num())
    call dftrace_region_end(r2)
    call dftrace_region_end(r1)
  end do
  !$omp end parallel
  call dftrace_finalize(status=st)
  if (st /= dftrace_ok) error stop 'finalize failed'
end program fortran_threads
