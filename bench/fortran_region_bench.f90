! fortran_region_bench.f90: cost of a region through the Fortran module against the same calls made to the C ABI directly.
!
! Usage: fortran_region_bench <trace file> [iterations]. Prints one line per case: nanoseconds
! per region (begin + end) of wall-clock time and of the calling thread's CPU time (which
! leaves out the time other processes and the writer thread take on a loaded machine), each the
! best of 9 rounds in which the cases take turns; tracing on and writing to the file. The raw-C cases call dftrace_region_begin/_end through bind(c) interfaces declared
! here, so the difference is what the module adds (lookup by path, generic dispatch, the
! terminating null of strings).
program fortran_region_bench
  use dftrace
  use bench_clock, only: thread_cpu_ns
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: int64, real64
  implicit none
  interface
    function raw_find(path) bind(c, name='dftrace_node_find') result(n)
      import :: c_char, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr) :: n
    end function raw_find
    function raw_begin(n) bind(c, name='dftrace_region_begin') result(r)
      import :: c_ptr, c_int64_t
      type(c_ptr), value :: n
      integer(c_int64_t) :: r
    end function raw_begin
    subroutine raw_end(r) bind(c, name='dftrace_region_end')
      import :: c_int64_t
      integer(c_int64_t), value :: r
    end subroutine raw_end
    subroutine raw_arg_int(r, key, v) bind(c, name='dftrace_region_arg_int')
      import :: c_int64_t, c_char
      integer(c_int64_t), value :: r
      character(kind=c_char), dimension(*), intent(in) :: key
      integer(c_int64_t), value :: v
    end subroutine raw_arg_int
  end interface
  integer, parameter :: reps = 9, ncases = 7
  character(len=40), parameter :: names(ncases) = [character(len=40) :: &
    'C ABI direct (handle)', 'Fortran, handle', 'Fortran, path', 'C ABI direct + 1 int arg', &
    'Fortran, handle + 1 int arg', 'Fortran, handle, node disabled', 'Fortran, path, tracing off']
  real(real64) :: t(ncases, reps), cpu(ncases, reps)
  integer :: k, c
  character(len=4096) :: out, arg
  integer :: n, st
  type(dftrace_node) :: fwd, off_node
  type(c_ptr) :: raw_fwd

  call get_command_argument(1, out)
  n = 200000
  if (command_argument_count() >= 2) then
    call get_command_argument(2, arg)
    read (arg, *) n
  end if
  call dftrace_init(enable=.true., output_file=out, status=st)
  if (st /= dftrace_ok) then
    print '(2a)', 'init failed: ', dftrace_status_string(st)
    stop 1
  end if
  fwd = dftrace_node('compute.forward')
  raw_fwd = raw_find('compute.forward'//c_null_char)
  off_node = dftrace_node('bench.disabled')
  call dftrace_disable(off_node)

  print '(a,i0,a)', 'ns per region (begin+end), best of 9 rounds of ', n, ' regions'
  do k = 1, reps
    do c = 1, ncases
      if (c == 7) call dftrace_set_enabled(.false.)
      call run(c, t(c, k), cpu(c, k))
      if (c == 7) call dftrace_set_enabled(.true.)
    end do
  end do
  print '(a40,2a12)', 'case', 'wall ns', 'cpu ns'
  do c = 1, ncases
    print '(a40,2f12.1)', names(c), minval(t(c, :)), minval(cpu(c, :))
  end do
  call dftrace_finalize()

contains

  subroutine run(kind, ns, cpu_ns)
    integer, intent(in) :: kind
    real(real64), intent(out) :: ns, cpu_ns
    integer(int64) :: c0, c1, rate, i
    integer(dftrace_region_kind) :: r
    real(real64) :: cpu0
    type(dftrace_node) :: node
    call dftrace_flush()  ! start with empty buffers
    call system_clock(c0, rate)
    cpu0 = thread_cpu_ns()
    select case (kind)
    case (1)
      do i = 1, n
        r = raw_begin(raw_fwd)
        call raw_end(r)
      end do
    case (2, 6)  ! 6: the node is switched off
      node = fwd
      if (kind == 6) node = off_node
      do i = 1, n
        r = dftrace_region_begin(node)
        call dftrace_region_end(r)
      end do
    case (3, 7)  ! 7: tracing is switched off
      do i = 1, n
        r = dftrace_region_begin('compute.forward')
        call dftrace_region_end(r)
      end do
    case (4)
      do i = 1, n
        r = raw_begin(raw_fwd)
        call raw_arg_int(r, 'layer'//c_null_char, i)
        call raw_end(r)
      end do
    case (5)
      do i = 1, n
        r = dftrace_region_begin(fwd)
        call dftrace_region_arg(r, 'layer', i)
        call dftrace_region_end(r)
      end do
    end select
    call system_clock(c1)
    ns = real(c1 - c0, real64) / real(rate, real64) * 1.0d9 / real(n, real64)
    cpu_ns = (thread_cpu_ns() - cpu0) / real(n, real64)
  end subroutine run

end program fortran_region_bench
