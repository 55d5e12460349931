! bench_clock.f90: what the Fortran benchmarks share: the calling thread's CPU time (Linux).
module bench_clock
  use, intrinsic :: iso_c_binding
  implicit none
  private
  public :: thread_cpu_ns

  ! struct timespec of Linux x86_64/aarch64 (64-bit time_t and long).
  type, bind(c) :: timespec
    integer(c_int64_t) :: tv_sec, tv_nsec
  end type timespec
  integer(c_int), parameter :: clock_thread_cputime_id = 3  ! Linux

  interface
    function clock_gettime(clk, ts) bind(c, name='clock_gettime') result(rc)
      import :: c_int, timespec
      integer(c_int), value :: clk
      type(timespec), intent(out) :: ts
      integer(c_int) :: rc
    end function clock_gettime
  end interface

contains

  !> CPU time of the calling thread in nanoseconds (0 when the clock can not be read): on a
  !> loaded machine it leaves out the time other processes and the writer thread take.
  function thread_cpu_ns() result(ns)
    real(c_double) :: ns
    type(timespec) :: ts
    ns = 0
    if (clock_gettime(clock_thread_cputime_id, ts) /= 0) return
    ns = real(ts%tv_sec, c_double) * 1.0d9 + real(ts%tv_nsec, c_double)
  end function thread_cpu_ns

end module bench_clock
