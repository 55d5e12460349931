! kernel.f90: the Fortran kernels of the mixed example, called from C++ (bind(c)), annotated with the dftrace module.
module mixed_kernel
  use, intrinsic :: iso_c_binding
  use dftrace
  implicit none
  private

  ! Node handles, looked up once: a path lookup takes the tree's lock, a handle does not.
  ! The example is single-threaded; a racing first call would only look them up twice.
  type(dftrace_node), save :: matvec_node, matvec_t_node, axpy_node
  logical, save :: have_nodes = .false.

contains

  subroutine find_nodes()
    matvec_node = dftrace_node_derive('compute.forward', 'matvec')      ! "forward.matvec"
    matvec_t_node = dftrace_node_derive('compute.backward', 'matvec_t') ! "backward.matvec_t"
    axpy_node = dftrace_node_derive('compute.step', 'axpy')             ! "step.axpy"
    have_nodes = .true.
  end subroutine find_nodes

  !> Begins a matrix kernel's region on `node`, with the matrix's shape as its arguments.
  function begin_matrix_region(node, rows, cols) result(r)
    type(dftrace_node), intent(in) :: node
    integer(c_int), intent(in) :: rows, cols
    integer(dftrace_region_kind) :: r
    r = dftrace_region_begin(node)
    call dftrace_region_arg(r, 'rows', rows)
    call dftrace_region_arg(r, 'cols', cols)
  end function begin_matrix_region

  !> y = A x, A stored column-major (rows x cols) as C++ hands it over.
  subroutine mixed_kernel_matvec(rows, cols, a, x, y) bind(c, name='mixed_kernel_matvec')
    integer(c_int), value, intent(in) :: rows, cols
    real(c_double), intent(in) :: a(rows, cols), x(cols)
    real(c_double), intent(out) :: y(rows)
    integer(dftrace_region_kind) :: r
    if (.not. have_nodes) call find_nodes()
    r = begin_matrix_region(matvec_node, rows, cols)
    y = matmul(a, x)
    call dftrace_region_end(r)
  end subroutine mixed_kernel_matvec

  !> y = A^T g.
  subroutine mixed_kernel_matvec_t(rows, cols, a, g, y) bind(c, name='mixed_kernel_matvec_t')
    integer(c_int), value, intent(in) :: rows, cols
    real(c_double), intent(in) :: a(rows, cols), g(rows)
    real(c_double), intent(out) :: y(cols)
    integer(dftrace_region_kind) :: r
    if (.not. have_nodes) call find_nodes()
    r = begin_matrix_region(matvec_t_node, rows, cols)
    y = matmul(transpose(a), g)
    call dftrace_region_end(r)
  end subroutine mixed_kernel_matvec_t

  !> y = y + alpha x.
  subroutine mixed_kernel_axpy(n, alpha, x, y) bind(c, name='mixed_kernel_axpy')
    integer(c_int), value, intent(in) :: n
    real(c_double), value, intent(in) :: alpha
    real(c_double), intent(in) :: x(n)
    real(c_double), intent(inout) :: y(n)
    integer(dftrace_region_kind) :: r
    if (.not. have_nodes) call find_nodes()
    r = dftrace_region_begin(axpy_node)
    call dftrace_region_arg(r, 'n', n)
    call dftrace_region_arg(r, 'alpha', alpha)
    y = y + alpha * x
    call dftrace_region_end(r)
  end subroutine mixed_kernel_axpy

end module mixed_kernel
