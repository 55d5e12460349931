! mpi_fortran_bench.f90: cost of libdftrace_mpi's Fortran wrapper per MPI call. One rank, one
! run: 5 interleaved rounds of N tiny MPI_Allreduce (1 integer, MPI_COMM_SELF) through the
! Fortran binding, with comm.all_reduce recording and switched off; each figure is the median
! round in CPU time of the calling thread (the writer thread's work is not counted).
! Usage: mpirun -np 1 mpi_fortran_bench [N]   (tracing enabled by DFTRACE_ENABLE=1)
program mpi_fortran_bench
  use mpi
  use dftrace
  use bench_clock, only: thread_cpu_ns
  implicit none
  integer, parameter :: rounds = 5
  integer :: ierr, n, i, k, x, y
  character(len=32) :: arg
  double precision :: on(rounds), off(rounds)

  call MPI_Init(ierr)
  n = 200000
  if (command_argument_count() >= 1) then
    call get_command_argument(1, arg)
    read (arg, *) n
  end if
  x = 1
  do k = 1, rounds
    call dftrace_enable('comm.all_reduce')
    on(k) = timed()
    call dftrace_disable('comm.all_reduce')
    off(k) = timed()
  end do
  call dftrace_enable('comm.all_reduce')
  print '(a,i0,a)', 'Fortran MPI_Allreduce(1 integer, MPI_COMM_SELF), ', n, ' calls per round, median of 5, thread CPU'
  print '(a,f8.1,a)', '  wrapper, recording            ', median(on), ' ns/call'
  print '(a,f8.1,a)', '  wrapper, comm.all_reduce off  ', median(off), ' ns/call'
  print '(a,f8.1,a)', '  recording minus off           ', median(on) - median(off), ' ns/call'
  call MPI_Finalize(ierr)

contains

  double precision function timed()
    double precision :: t0
    t0 = thread_cpu_ns()
    do i = 1, n
      call MPI_Allreduce(x, y, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_SELF, ierr)
    end do
    timed = (thread_cpu_ns() - t0) / n
  end function timed

  double precision function median(v)
    double precision, intent(in) :: v(rounds)
    double precision :: s(rounds), t
    integer :: a, b
    s = v
    do a = 1, rounds - 1
      do b = a + 1, rounds
        if (s(b) < s(a)) then
          t = s(a); s(a) = s(b); s(b) = t
        end if
      end do
    end do
    median = s((rounds + 1) / 2)
  end function median
end program mpi_fortran_bench
