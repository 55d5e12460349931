! fortran_ai_tree.f90: prints, for each dotted path read from standard input, the node the Fortran
! module finds there (name, category, path); check_fortran_ai_tree.py compares with the table.
program fortran_ai_tree
  use dftrace
  implicit none
  character(len=256) :: path
  type(dftrace_node) :: n
  integer :: ios

  do
    read (*, '(A)', iostat=ios) path
    if (ios /= 0) exit
    n = dftrace_node(trim(path))
    write (*, '(A)') trim(path)//' '//dftrace_node_name(n)//' '//dftrace_node_category(n)//' '// &
      dftrace_node_path(n)
  end do
end program fortran_ai_tree
