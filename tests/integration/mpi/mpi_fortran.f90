! mpi_fortran.f90: a Fortran MPI program (`use mpi`) annotated with the dftrace module, run on
! 2 ranks; mpi_test.py's "fortran" scenario checks that libdftrace_mpi traced its MPI calls
! (made through the Fortran bindings) with the right bytes, peers and tags, and its rank.
program mpi_fortran
  use mpi
  use dftrace
  implicit none
  integer, parameter :: steps = 5
  integer :: ierr, rank, nranks, s, partner, provided, dup, alone, alone_dup, rev, rev_dup, pair, pair_dup, req
  integer :: cfg(4), halo(64), halo_in(64), ring_out(3), ring_in(3)
  integer :: status(MPI_STATUS_SIZE)
  integer(dftrace_region_kind) :: r
  double precision :: grad(100), total(100)

  call MPI_Init_thread(MPI_THREAD_FUNNELED, provided, ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nranks, ierr)
  partner = ieor(rank, 1)
  cfg = [steps, 0, 0, 0]
  halo = rank
  call MPI_Bcast(cfg, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ierr)                  ! 16 bytes
  do s = 1, steps
    r = dftrace_region_begin('compute.forward')
    grad = rank + s
    call dftrace_region_end(r)
    call MPI_Allreduce(grad, total, 100, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)  ! 800
    if (mod(rank, 2) == 0) then
      call MPI_Send(halo, 10 + rank, MPI_INTEGER, partner, 100 + s, MPI_COMM_WORLD, ierr)
      call MPI_Recv(halo_in, 64, MPI_INTEGER, MPI_ANY_SOURCE, 100 + s, MPI_COMM_WORLD, status, ierr)
    else
      call MPI_Recv(halo_in, 64, MPI_INTEGER, partner, 100 + s, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
      call MPI_Send(halo, 10 + rank, MPI_INTEGER, partner, 100 + s, MPI_COMM_WORLD, ierr)
    end if
  end do
  ring_out = rank
  call MPI_Sendrecv(ring_out, 3, MPI_INTEGER, mod(rank + 1, nranks), 7, ring_in, 3, MPI_INTEGER, &
                    mod(rank + nranks - 1, nranks), 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)   ! 12 each way
  call MPI_Allreduce(MPI_IN_PLACE, total, 100, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  call MPI_Barrier(MPI_COMM_WORLD, ierr)
  call MPI_Comm_dup(MPI_COMM_WORLD, dup, ierr)  ! a communicator of the same members: its own id
  call MPI_Barrier(dup, ierr)
  call MPI_Comm_free(dup, ierr)
  ! a duplicate of a communicator that has had no collective: its id is still "<rank>+1"
  call MPI_Comm_split(MPI_COMM_WORLD, rank, 0, alone, ierr)
  call MPI_Comm_dup(alone, alone_dup, ierr)
  call MPI_Barrier(alone_dup, ierr)
  call MPI_Comm_free(alone_dup, ierr)
  call MPI_Comm_free(alone, ierr)
  ! the same through MPI_Comm_idup ("1,0+1") and MPI_Comm_dup_with_info ("0-1+1")
  call MPI_Comm_split(MPI_COMM_WORLD, 0, -rank, rev, ierr)
  call MPI_Comm_idup(rev, rev_dup, req, ierr)
  call MPI_Wait(req, MPI_STATUS_IGNORE, ierr)
  call MPI_Barrier(rev_dup, ierr)
  call MPI_Comm_split(MPI_COMM_WORLD, 0, rank, pair, ierr)
  call MPI_Comm_dup_with_info(pair, MPI_INFO_NULL, pair_dup, ierr)
  call MPI_Barrier(pair_dup, ierr)
  call MPI_Comm_free(pair_dup, ierr)
  call MPI_Comm_free(pair, ierr)
  call MPI_Comm_free(rev_dup, ierr)
  call MPI_Comm_free(rev, ierr)
  print '(a,i0,a,i0,a,i0)', 'rank ', rank, ' of ', nranks, ' done ', int(total(1))
  call MPI_Finalize(ierr)
end program mpi_fortran
