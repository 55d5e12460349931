! dftrace.f90: the Fortran face of dftrace, module `dftrace`, written with ISO_C_BINDING over the C ABI only.
!
! It keeps no tracing state of its own (nesting, arguments and enable flags live in the core),
! so that Fortran regions nest inside C, C++ and Python regions of the same thread and land in
! the same trace. See README.md in this folder for the design and the list of procedures.
module dftrace
  use, intrinsic :: iso_c_binding
  use, intrinsic :: iso_fortran_env, only: error_unit, int8, int16, int32, int64, real32, real64
  implicit none
  private

  ! ------------------------------------------------------------------ constants

  !> Kind of a region value: the bits of the C dftrace_region_t (uint64_t); 0 = not recorded.
  integer, parameter, public :: dftrace_region_kind = c_int64_t

  ! Status codes of the set-up calls (dftrace.h); 0 = ok, negative = error.
  integer, parameter, public :: dftrace_ok = 0
  integer, parameter, public :: dftrace_err_invalid_argument = -1
  integer, parameter, public :: dftrace_err_config = -2
  integer, parameter, public :: dftrace_err_io = -3
  integer, parameter, public :: dftrace_err_state = -4
  integer, parameter, public :: dftrace_err_not_found = -5
  integer, parameter, public :: dftrace_err_disabled = -6

  ! Kinds of dftrace_hash_define.
  integer, parameter, public :: dftrace_hash_host = 1, dftrace_hash_string = 2, dftrace_hash_file = 3

  !> A node of the tree (opaque C handle). Valid until the process exits; never freed.
  !> Default-initialised to "no node", for which every call is a no-op.
  type, public :: dftrace_node
    type(c_ptr) :: ptr = c_null_ptr
  end type dftrace_node

  !> State of one iter loop (dftrace_iter_t, field for field); owned by the caller, usually a
  !> local variable. Per item: one "<n>.iter" event (obtaining it) and one "<n>.block" event
  !> (the loop body), both with arg count = 1, 2, ...
  type, bind(c), public :: dftrace_iter
    integer(c_size_t) :: struct_size = 0
    type(c_ptr) :: iter_node = c_null_ptr
    type(c_ptr) :: block_node = c_null_ptr
    integer(c_int64_t) :: open_iter = 0
    integer(c_int64_t) :: open_block = 0
    integer(c_int64_t) :: count = 0
    integer(c_int32_t) :: flags = 0
    integer(c_int32_t) :: enable = -1
  end type dftrace_iter

  ! ------------------------------------------------------------------ public procedures

  public :: dftrace_init, dftrace_finalize, dftrace_flush, dftrace_step, dftrace_trigger
  public :: dftrace_is_enabled, dftrace_set_enabled
  public :: dftrace_output_path, dftrace_version, dftrace_status_string
  public :: dftrace_node_derive, dftrace_node_name, dftrace_node_category, dftrace_node_path
  public :: dftrace_region_begin, dftrace_region_end, dftrace_region_cancel, dftrace_region_arg
  public :: dftrace_update, dftrace_update_remove
  public :: dftrace_enable, dftrace_disable, dftrace_node_is_enabled
  public :: dftrace_counter, dftrace_instant
  public :: dftrace_metadata, dftrace_process_property, dftrace_mark_start, dftrace_mark_end
  public :: dftrace_thread_name, dftrace_set_rank, dftrace_hash_define
  public :: dftrace_iter_fetch, dftrace_iter_body, dftrace_iter_end
  public :: dftrace_events_written, dftrace_events_dropped

  !> h = dftrace_node(path): the node at a dotted path ('compute.forward'; '' or 'ai' is the
  !> root), created (category, then children) when it does not exist yet.
  interface dftrace_node
    module procedure node_from_path
  end interface dftrace_node

  !> r = dftrace_region_begin(path_or_node [, enable]): begins a region on the calling thread.
  !> enable absent: the node's state decides; .true./.false.: forced on/off for this use.
  interface dftrace_region_begin
    module procedure region_begin_path, region_begin_node
  end interface dftrace_region_begin

  !> call dftrace_update(path_or_node, key, value): sets an argument on a whole subtree.
  interface dftrace_update
    module procedure update_path, update_node
  end interface dftrace_update

  interface dftrace_update_remove
    module procedure update_remove_path, update_remove_node
  end interface dftrace_update_remove

  interface dftrace_enable
    module procedure enable_path, enable_node
  end interface dftrace_enable

  interface dftrace_disable
    module procedure disable_path, disable_node
  end interface dftrace_disable

  interface dftrace_node_is_enabled
    module procedure is_enabled_path, is_enabled_node
  end interface dftrace_node_is_enabled

  interface dftrace_node_derive
    module procedure derive_path, derive_node
  end interface dftrace_node_derive

  !> call dftrace_iter_begin(it, path_or_node [, include_iter] [, include_block] [, iter_name]
  !> [, block_name] [, enable]): prepares an iter loop; no event yet.
  interface dftrace_iter_begin
    module procedure iter_begin_path, iter_begin_node
  end interface dftrace_iter_begin
  public :: dftrace_iter_begin

  interface dftrace_counter
    module procedure counter_path, counter_node
  end interface dftrace_counter

  interface dftrace_instant
    module procedure instant_path, instant_node
  end interface dftrace_instant

  interface dftrace_mark_start
    module procedure mark_start_path, mark_start_node
  end interface dftrace_mark_start

  interface dftrace_mark_end
    module procedure mark_end_path, mark_end_node
  end interface dftrace_mark_end

  ! ------------------------------------------------------------------ the C ABI

  ! dftrace_options_t, field for field (bind(c) gives the C layout and padding).
  type, bind(c) :: options_t
    integer(c_size_t) :: struct_size
    integer(c_int) :: enable
    type(c_ptr) :: config_file
    type(c_ptr) :: output_prefix
    type(c_ptr) :: output_file
    integer(c_int) :: compression
    integer(c_int) :: level
    type(c_ptr) :: exec_name
    integer(c_int) :: metadata
    integer(c_int) :: install_signal_handlers
    integer(c_int) :: bind_atexit
  end type options_t

  interface
    function c_strlen(s) bind(c, name='strlen') result(n)
      import :: c_ptr, c_size_t
      type(c_ptr), value :: s
      integer(c_size_t) :: n
    end function c_strlen
    function c_status_string(status) bind(c, name='dftrace_status_string') result(s)
      import :: c_int, c_ptr
      integer(c_int), value :: status
      type(c_ptr) :: s
    end function c_status_string
    function c_version() bind(c, name='dftrace_version') result(s)
      import :: c_ptr
      type(c_ptr) :: s
    end function c_version
    subroutine c_options_init(o) bind(c, name='dftrace_options_init')
      import :: options_t
      type(options_t), intent(inout) :: o
    end subroutine c_options_init
    function c_init(o) bind(c, name='dftrace_init') result(st)
      import :: options_t, c_int
      type(options_t), intent(in) :: o
      integer(c_int) :: st
    end function c_init
    function c_finalize() bind(c, name='dftrace_finalize') result(st)
      import :: c_int
      integer(c_int) :: st
    end function c_finalize
    function c_flush() bind(c, name='dftrace_flush') result(st)
      import :: c_int
      integer(c_int) :: st
    end function c_flush
    function c_step() bind(c, name='dftrace_step') result(st)
      import :: c_int
      integer(c_int) :: st
    end function c_step
    function c_trigger(reason) bind(c, name='dftrace_trigger') result(st)
      import :: c_char, c_int
      character(kind=c_char), dimension(*), intent(in) :: reason
      integer(c_int) :: st
    end function c_trigger
    function c_is_enabled() bind(c, name='dftrace_is_enabled') result(on)
      import :: c_bool
      logical(c_bool) :: on
    end function c_is_enabled
    subroutine c_set_enabled(on) bind(c, name='dftrace_set_enabled')
      import :: c_bool
      logical(c_bool), value :: on
    end subroutine c_set_enabled
    function c_output_path() bind(c, name='dftrace_output_path') result(s)
      import :: c_ptr
      type(c_ptr) :: s
    end function c_output_path
    function c_node_find(path) bind(c, name='dftrace_node_find') result(n)
      import :: c_char, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: path
      type(c_ptr) :: n
    end function c_node_find
    function c_category(name) bind(c, name='dftrace_category') result(n)
      import :: c_char, c_ptr
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr) :: n
    end function c_category
    function c_node_child(parent, name) bind(c, name='dftrace_node_child') result(n)
      import :: c_char, c_ptr
      type(c_ptr), value :: parent
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr) :: n
    end function c_node_child
    function c_node_derive(parent, name) bind(c, name='dftrace_node_derive') result(n)
      import :: c_char, c_ptr
      type(c_ptr), value :: parent
      character(kind=c_char), dimension(*), intent(in) :: name
      type(c_ptr) :: n
    end function c_node_derive
    function c_node_name(n) bind(c, name='dftrace_node_name') result(s)
      import :: c_ptr
      type(c_ptr), value :: n
      type(c_ptr) :: s
    end function c_node_name
    function c_node_category(n) bind(c, name='dftrace_node_category') result(s)
      import :: c_ptr
      type(c_ptr), value :: n
      type(c_ptr) :: s
    end function c_node_category
    function c_node_path(n) bind(c, name='dftrace_node_path') result(s)
      import :: c_ptr
      type(c_ptr), value :: n
      type(c_ptr) :: s
    end function c_node_path
    subroutine c_node_enable(n) bind(c, name='dftrace_node_enable')
      import :: c_ptr
      type(c_ptr), value :: n
    end subroutine c_node_enable
    subroutine c_node_disable(n) bind(c, name='dftrace_node_disable')
      import :: c_ptr
      type(c_ptr), value :: n
    end subroutine c_node_disable
    function c_node_is_enabled(n) bind(c, name='dftrace_node_is_enabled') result(on)
      import :: c_ptr, c_bool
      type(c_ptr), value :: n
      logical(c_bool) :: on
    end function c_node_is_enabled
    subroutine c_node_update_int(n, key, v) bind(c, name='dftrace_node_update_int')
      import :: c_ptr, c_char, c_int64_t
      type(c_ptr), value :: n
      character(kind=c_char), dimension(*), intent(in) :: key
      integer(c_int64_t), value :: v
    end subroutine c_node_update_int
    subroutine c_node_update_double(n, key, v) bind(c, name='dftrace_node_update_double')
      import :: c_ptr, c_char, c_double
      type(c_ptr), value :: n
      character(kind=c_char), dimension(*), intent(in) :: key
      real(c_double), value :: v
    end subroutine c_node_update_double
    subroutine c_node_update_string(n, key, v) bind(c, name='dftrace_node_update_string')
      import :: c_ptr, c_char
      type(c_ptr), value :: n
      character(kind=c_char), dimension(*), intent(in) :: key, v
    end subroutine c_node_update_string
    subroutine c_node_update_bool(n, key, v) bind(c, name='dftrace_node_update_bool')
      import :: c_ptr, c_char, c_bool
      type(c_ptr), value :: n
      character(kind=c_char), dimension(*), intent(in) :: key
      logical(c_bool), value :: v
    end subroutine c_node_update_bool
    subroutine c_node_update_remove(n, key) bind(c, name='dftrace_node_update_remove')
      import :: c_ptr, c_char
      type(c_ptr), value :: n
      character(kind=c_char), dimension(*), intent(in) :: key
    end subroutine c_node_update_remove
    function c_region_begin(n) bind(c, name='dftrace_region_begin') result(r)
      import :: c_ptr, c_int64_t
      type(c_ptr), value :: n
      integer(c_int64_t) :: r
    end function c_region_begin
    function c_region_begin_ex(n, enable, args, nargs) bind(c, name='dftrace_region_begin_ex') result(r)
      import :: c_ptr, c_int, c_size_t, c_int64_t
      type(c_ptr), value :: n
      integer(c_int), value :: enable
      type(c_ptr), value :: args
      integer(c_size_t), value :: nargs
      integer(c_int64_t) :: r
    end function c_region_begin_ex
    subroutine c_region_arg_int(r, key, v) bind(c, name='dftrace_region_arg_int')
      import :: c_int64_t, c_char
      integer(c_int64_t), value :: r
      character(kind=c_char), dimension(*), intent(in) :: key
      integer(c_int64_t), value :: v
    end subroutine c_region_arg_int
    subroutine c_region_arg_double(r, key, v) bind(c, name='dftrace_region_arg_double')
      import :: c_int64_t, c_char, c_double
      integer(c_int64_t), value :: r
      character(kind=c_char), dimension(*), intent(in) :: key
      real(c_double), value :: v
    end subroutine c_region_arg_double
    subroutine c_region_arg_string(r, key, v) bind(c, name='dftrace_region_arg_string')
      import :: c_int64_t, c_char
      integer(c_int64_t), value :: r
      character(kind=c_char), dimension(*), intent(in) :: key, v
    end subroutine c_region_arg_string
    subroutine c_region_arg_bool(r, key, v) bind(c, name='dftrace_region_arg_bool')
      import :: c_int64_t, c_char, c_bool
      integer(c_int64_t), value :: r
      character(kind=c_char), dimension(*), intent(in) :: key
      logical(c_bool), value :: v
    end subroutine c_region_arg_bool
    subroutine c_region_end(r) bind(c, name='dftrace_region_end')
      import :: c_int64_t
      integer(c_int64_t), value :: r
    end subroutine c_region_end
    subroutine c_region_cancel(r) bind(c, name='dftrace_region_cancel')
      import :: c_int64_t
      integer(c_int64_t), value :: r
    end subroutine c_region_cancel
    subroutine c_iter_begin(it, n, flags, iter_name, block_name, enable) bind(c, name='dftrace_iter_begin')
      import :: dftrace_iter, c_ptr, c_int32_t, c_int
      type(dftrace_iter), intent(inout) :: it
      type(c_ptr), value :: n
      integer(c_int32_t), value :: flags
      type(c_ptr), value :: iter_name, block_name
      integer(c_int), value :: enable
    end subroutine c_iter_begin
    subroutine c_iter_fetch(it) bind(c, name='dftrace_iter_fetch')
      import :: dftrace_iter
      type(dftrace_iter), intent(inout) :: it
    end subroutine c_iter_fetch
    subroutine c_iter_body(it) bind(c, name='dftrace_iter_body')
      import :: dftrace_iter
      type(dftrace_iter), intent(inout) :: it
    end subroutine c_iter_body
    subroutine c_iter_end(it) bind(c, name='dftrace_iter_end')
      import :: dftrace_iter
      type(dftrace_iter), intent(inout) :: it
    end subroutine c_iter_end
    subroutine c_instant(n, args, nargs) bind(c, name='dftrace_instant')
      import :: c_ptr, c_size_t
      type(c_ptr), value :: n
      type(c_ptr), value :: args
      integer(c_size_t), value :: nargs
    end subroutine c_instant
    subroutine c_counter_int(n, series, v) bind(c, name='dftrace_counter_int')
      import :: c_ptr, c_char, c_int64_t
      type(c_ptr), value :: n
      character(kind=c_char), dimension(*), intent(in) :: series
      integer(c_int64_t), value :: v
    end subroutine c_counter_int
    subroutine c_counter_double(n, series, v) bind(c, name='dftrace_counter_double')
      import :: c_ptr, c_char, c_double
      type(c_ptr), value :: n
      character(kind=c_char), dimension(*), intent(in) :: series
      real(c_double), value :: v
    end subroutine c_counter_double
    subroutine c_mark_start(n) bind(c, name='dftrace_node_mark_start')
      import :: c_ptr
      type(c_ptr), value :: n
    end subroutine c_mark_start
    subroutine c_mark_end(n) bind(c, name='dftrace_node_mark_end')
      import :: c_ptr
      type(c_ptr), value :: n
    end subroutine c_mark_end
    subroutine c_metadata(key, v) bind(c, name='dftrace_metadata')
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: key, v
    end subroutine c_metadata
    subroutine c_property_string(key, v) bind(c, name='dftrace_process_property_string')
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: key, v
    end subroutine c_property_string
    subroutine c_property_int(key, v) bind(c, name='dftrace_process_property_int')
      import :: c_char, c_int64_t
      character(kind=c_char), dimension(*), intent(in) :: key
      integer(c_int64_t), value :: v
    end subroutine c_property_int
    subroutine c_thread_name(name) bind(c, name='dftrace_thread_name')
      import :: c_char
      character(kind=c_char), dimension(*), intent(in) :: name
    end subroutine c_thread_name
    function c_set_rank(rank, size) bind(c, name='dftrace_set_rank') result(st)
      import :: c_int
      integer(c_int), value :: rank, size
      integer(c_int) :: st
    end function c_set_rank
    function c_hash_define(kind, v) bind(c, name='dftrace_hash_define') result(h)
      import :: c_int, c_char, c_int64_t
      integer(c_int), value :: kind
      character(kind=c_char), dimension(*), intent(in) :: v
      integer(c_int64_t) :: h
    end function c_hash_define
    function c_events_written() bind(c, name='dftrace_events_written') result(k)
      import :: c_int64_t
      integer(c_int64_t) :: k
    end function c_events_written
    function c_events_dropped() bind(c, name='dftrace_events_dropped') result(k)
      import :: c_int64_t
      integer(c_int64_t) :: k
    end function c_events_dropped
  end interface

  ! Names and string values up to this length are passed through a buffer on the stack; longer
  ! ones through a heap copy. Keeps the hot path (region arguments, updates, counters, path
  ! lookups) free of heap allocation.
  integer, parameter :: small_len = 127

  ! One diagnostic per kind of misuse, so that a bad call in a loop does not flood stderr.
  ! A race between threads can at worst print the line twice.
  logical, save :: warned_path = .false., warned_type = .false.

  ! Destinations of put_value: a node's subtree (dftrace_update), an open region
  ! (dftrace_region_arg), a counter sample (dftrace_counter).
  integer, parameter :: to_node = 1, to_region = 2, to_counter = 3

contains

  ! ------------------------------------------------------------------ strings

  ! A name as C wants it: trailing blanks (Fortran padding) dropped, null appended.
  pure function c_name(s) result(c)
    character(*), intent(in) :: s
    character(kind=c_char, len=len_trim(s) + 1) :: c
    c = s(1:len_trim(s))//c_null_char
  end function c_name

  ! A value as C wants it: verbatim, null appended.
  pure function c_value(s) result(c)
    character(*), intent(in) :: s
    character(kind=c_char, len=len(s) + 1) :: c
    c = s//c_null_char
  end function c_value

  ! A null-terminated copy of s in buf (trailing blanks dropped when `name`), or ok = .false.
  ! when s does not fit (the caller then uses c_name/c_value).
  subroutine to_c(s, buf, name, ok)
    character(*), intent(in) :: s
    character(kind=c_char, len=small_len + 1), intent(inout) :: buf
    logical, intent(in) :: name
    logical, intent(out) :: ok
    integer :: n
    n = len(s)
    if (name) n = len_trim(s)
    ok = n <= small_len
    if (.not. ok) return
    ! Two assignments, not a concatenation: gfortran builds a concatenation on the heap.
    buf(1:n) = s(1:n)
    buf(n + 1:n + 1) = c_null_char
  end subroutine to_c

  ! A C string owned by dftrace, copied into a Fortran string ('' for NULL).
  function f_string(p) result(s)
    type(c_ptr), intent(in) :: p
    character(len=:), allocatable :: s
    character(kind=c_char), pointer :: chars(:)
    integer :: i, n
    if (.not. c_associated(p)) then
      s = ''
      return
    end if
    n = int(c_strlen(p))
    call c_f_pointer(p, chars, [n])
    allocate (character(len=n) :: s)
    do i = 1, n
      s(i:i) = chars(i)
    end do
  end function f_string

  ! A null-terminated copy whose address stays valid while `a` lives (for dftrace_options_t).
  subroutine c_array(s, a)
    character(*), intent(in) :: s
    character(kind=c_char), allocatable, target, intent(out) :: a(:)
    integer :: i, n
    n = len_trim(s)
    allocate (a(n + 1))
    do i = 1, n
      a(i) = s(i:i)
    end do
    a(n + 1) = c_null_char
  end subroutine c_array

  subroutine warn_type(where, key)
    character(*), intent(in) :: where, key
    if (warned_type) return
    warned_type = .true.
    write (error_unit, '(5a)') 'dftrace: ', where, ": value of '", trim(key), &
      "' is not an integer, real, logical or character; ignored (further ones are not reported)"
    flush (error_unit)
  end subroutine warn_type

  ! ------------------------------------------------------------------ typed values

  ! put_value sends one key and class(*) value to the C function of its destination and type:
  ! the module's one `select type`, so that updates, region arguments and counters accept the
  ! same types the same way. `node_ptr` is the node (to_node, to_counter), `region` the region
  ! (to_region). Keys up to small_len go through a stack buffer (no heap on the hot path).
  subroutine put_value(dest, node_ptr, region, key, value)
    integer, intent(in) :: dest
    type(c_ptr), intent(in) :: node_ptr
    integer(dftrace_region_kind), intent(in) :: region
    character(*), intent(in) :: key
    class(*), intent(in) :: value
    character(kind=c_char, len=small_len + 1) :: kbuf
    logical :: ok
    call to_c(key, kbuf, .true., ok)
    if (ok) then
      call put_keyed(dest, node_ptr, region, kbuf, key, value)
    else
      call put_keyed(dest, node_ptr, region, c_name(key), key, value)
    end if
  end subroutine put_value

  ! put_value with the key already null-terminated in ckey: the value is converted to the C
  ! type it is passed as (c_type), then passed to the destination's C function of that type (all in one
  ! procedure: region arguments are on the hot path).
  subroutine put_keyed(dest, node_ptr, region, ckey, key, value)
    integer, intent(in) :: dest
    type(c_ptr), intent(in) :: node_ptr
    integer(dftrace_region_kind), intent(in) :: region
    character(kind=c_char, len=*), intent(in) :: ckey
    character(*), intent(in) :: key
    class(*), intent(in) :: value
    integer, parameter :: type_int = 1, type_double = 2, type_bool = 3
    integer :: c_type
    integer(c_int64_t) :: int_value
    real(c_double) :: double_value
    logical(c_bool) :: bool_value
    select type (value)
    type is (integer(int8))
      int_value = int(value, c_int64_t)
      c_type = type_int
    type is (integer(int16))
      int_value = int(value, c_int64_t)
      c_type = type_int
    type is (integer(int32))
      int_value = int(value, c_int64_t)
      c_type = type_int
    type is (integer(int64))
      int_value = int(value, c_int64_t)
      c_type = type_int
    type is (real(real32))
      double_value = real(value, c_double)
      c_type = type_double
    type is (real(real64))
      double_value = real(value, c_double)
      c_type = type_double
    type is (logical)
      bool_value = logical(value, c_bool)
      c_type = type_bool
    type is (logical(c_bool))
      bool_value = value
      c_type = type_bool
    type is (character(*))
      call put_string(dest, node_ptr, region, ckey, key, value)
      return
    class default
      call warn_type(put_where(dest), key)
      return
    end select
    if (dest == to_region) then
      if (c_type == type_int) call c_region_arg_int(region, ckey, int_value)
      if (c_type == type_double) call c_region_arg_double(region, ckey, double_value)
      if (c_type == type_bool) call c_region_arg_bool(region, ckey, bool_value)
    else if (dest == to_node) then
      if (c_type == type_int) call c_node_update_int(node_ptr, ckey, int_value)
      if (c_type == type_double) call c_node_update_double(node_ptr, ckey, double_value)
      if (c_type == type_bool) call c_node_update_bool(node_ptr, ckey, bool_value)
    else
      ! A counter takes numbers only.
      if (c_type == type_int) call c_counter_int(node_ptr, ckey, int_value)
      if (c_type == type_double) call c_counter_double(node_ptr, ckey, double_value)
      if (c_type == type_bool) call warn_type(put_where(dest), key)
    end if
  end subroutine put_keyed

  ! A character value: null-terminated on the stack when short (heap copy otherwise).
  subroutine put_string(dest, node_ptr, region, ckey, key, value)
    integer, intent(in) :: dest
    type(c_ptr), intent(in) :: node_ptr
    integer(dftrace_region_kind), intent(in) :: region
    character(kind=c_char, len=*), intent(in) :: ckey
    character(*), intent(in) :: key, value
    character(kind=c_char, len=small_len + 1) :: vbuf
    logical :: ok
    if (dest == to_counter) then
      call warn_type(put_where(dest), key)
      return
    end if
    call to_c(value, vbuf, .false., ok)
    if (dest == to_region .and. ok) call c_region_arg_string(region, ckey, vbuf)
    if (dest == to_region .and. .not. ok) call c_region_arg_string(region, ckey, c_value(value))
    if (dest == to_node .and. ok) call c_node_update_string(node_ptr, ckey, vbuf)
    if (dest == to_node .and. .not. ok) call c_node_update_string(node_ptr, ckey, c_value(value))
  end subroutine put_string

  ! The public procedure a destination belongs to, for diagnostics.
  function put_where(dest) result(where)
    integer, intent(in) :: dest
    character(len=:), allocatable :: where
    select case (dest)
    case (to_node)
      where = 'dftrace_update'
    case (to_region)
      where = 'dftrace_region_arg'
    case default
      where = 'dftrace_counter'
    end select
  end function put_where

  ! ------------------------------------------------------------------ set-up

  !> Starts tracing. Every argument is optional; those given override the configuration
  !> (defaults < YAML < environment < these). Without `enable`, the configuration and the
  !> environment (DFTRACE_ENABLE) decide. status: 0, or dftrace_err_disabled when the
  !> configuration leaves tracing off, or another negative code.
  subroutine dftrace_init(enable, output_file, output_prefix, config_file, exec_name, status)
    logical, intent(in), optional :: enable
    character(*), intent(in), optional :: output_file, output_prefix, config_file, exec_name
    integer, intent(out), optional :: status
    type(options_t) :: o
    character(kind=c_char), allocatable, target :: file(:), prefix(:), config(:), exec(:)
    integer(c_int) :: st
    call c_options_init(o)
    if (present(enable)) o%enable = merge(1_c_int, 0_c_int, enable)
    if (present(output_file)) then
      call c_array(output_file, file)
      o%output_file = c_loc(file)
    end if
    if (present(output_prefix)) then
      call c_array(output_prefix, prefix)
      o%output_prefix = c_loc(prefix)
    end if
    if (present(config_file)) then
      call c_array(config_file, config)
      o%config_file = c_loc(config)
    end if
    if (present(exec_name)) then
      call c_array(exec_name, exec)
      o%exec_name = c_loc(exec)
    end if
    st = c_init(o)
    if (present(status)) status = int(st)
  end subroutine dftrace_init

  !> Writes everything, the end event and the closing "]"; safe to call more than once.
  subroutine dftrace_finalize(status)
    integer, intent(out), optional :: status
    integer(c_int) :: st
    st = c_finalize()
    if (present(status)) status = int(st)
  end subroutine dftrace_finalize

  !> Writes everything buffered so far into the file, as whole gzip members.
  subroutine dftrace_flush(status)
    integer, intent(out), optional :: status
    integer(c_int) :: st
    st = c_flush()
    if (present(status)) status = int(st)
  end subroutine dftrace_flush

  !> The end of a training step (the schedule, docs/configuration.md schedule.*): ready is
  !> .true. when the step closed an active window, whose events are then in the file.
  subroutine dftrace_step(ready, status)
    logical, intent(out), optional :: ready
    integer, intent(out), optional :: status
    integer(c_int) :: st
    st = c_step()
    if (present(ready)) ready = st == 1
    if (present(status)) status = merge(0, int(st), st == 1)
  end subroutine dftrace_step

  !> A trigger of the flight recorder (output.mode: ring, docs/flight-recorder.md): the last
  !> ring.seconds of events are written with a trigger line naming reason. taken is .true.
  !> when the trigger was taken (not: not in ring mode, not tracing, within trigger.min_gap).
  subroutine dftrace_trigger(reason, taken)
    character(*), intent(in) :: reason
    logical, intent(out), optional :: taken
    integer(c_int) :: st
    st = c_trigger(c_value(trim(reason)))
    if (present(taken)) taken = st == 1
  end subroutine dftrace_trigger

  !> True while events are being recorded.
  logical function dftrace_is_enabled()
    dftrace_is_enabled = logical(c_is_enabled())
  end function dftrace_is_enabled

  !> Switches recording for the whole process without touching node states.
  subroutine dftrace_set_enabled(on)
    logical, intent(in) :: on
    call c_set_enabled(logical(on, c_bool))
  end subroutine dftrace_set_enabled

  !> This process's trace file, or '' before the first write / when disabled.
  function dftrace_output_path() result(s)
    character(len=:), allocatable :: s
    s = f_string(c_output_path())
  end function dftrace_output_path

  function dftrace_version() result(s)
    character(len=:), allocatable :: s
    s = f_string(c_version())
  end function dftrace_version

  !> Name of a status code ("ok", "invalid argument", ...).
  function dftrace_status_string(status) result(s)
    integer, intent(in) :: status
    character(len=:), allocatable :: s
    s = f_string(c_status_string(int(status, c_int)))
  end function dftrace_status_string

  ! ------------------------------------------------------------------ nodes

  ! The node at `path`, created like the C++ face does (category, then children) when the
  ! tree does not have it; c_null_ptr (and one diagnostic) for a malformed path.
  function lookup(path) result(p)
    character(*), intent(in) :: path
    type(c_ptr) :: p
    integer :: first, last, dot, seg_end
    character(kind=c_char, len=small_len + 1) :: buf
    logical :: ok
    call to_c(path, buf, .true., ok)
    if (ok) then
      p = c_node_find(buf)
    else
      p = c_node_find(c_name(path))
    end if
    if (c_associated(p)) return
    last = len_trim(path)
    first = 1
    if (last > 3) then
      if (path(1:3) == 'ai.') first = 4
    end if
    do while (first <= last)
      dot = index(path(first:last), '.')
      seg_end = last
      if (dot /= 0) seg_end = first + dot - 2
      if (seg_end < first) exit ! empty segment
      if (c_associated(p)) then
        p = c_node_child(p, c_name(path(first:seg_end)))
      else
        p = c_category(c_name(path(first:seg_end)))
      end if
      if (.not. c_associated(p)) exit
      if (dot == 0) return
      first = seg_end + 2
    end do
    p = c_null_ptr
    if (.not. warned_path) then
      warned_path = .true.
      write (error_unit, '(3a)') "dftrace: invalid node path '", trim(path), &
        "' (empty segment); calls on it are ignored (further ones are not reported)"
      flush (error_unit)
    end if
  end function lookup

  function node_from_path(path) result(node)
    character(*), intent(in) :: path
    type(dftrace_node) :: node
    node%ptr = lookup(path)
  end function node_from_path

  !> The derived node '<parent event name>.<name>' in the parent's category.
  function derive_node(parent, name) result(node)
    type(dftrace_node), intent(in) :: parent
    character(*), intent(in) :: name
    type(dftrace_node) :: node
    node%ptr = c_null_ptr
    if (c_associated(parent%ptr)) node%ptr = c_node_derive(parent%ptr, c_name(name))
  end function derive_node

  function derive_path(parent, name) result(node)
    character(*), intent(in) :: parent
    character(*), intent(in) :: name
    type(dftrace_node) :: node
    node = derive_node(node_from_path(parent), name)
  end function derive_path

  function dftrace_node_name(node) result(s)
    type(dftrace_node), intent(in) :: node
    character(len=:), allocatable :: s
    s = ''
    if (c_associated(node%ptr)) s = f_string(c_node_name(node%ptr))
  end function dftrace_node_name

  function dftrace_node_category(node) result(s)
    type(dftrace_node), intent(in) :: node
    character(len=:), allocatable :: s
    s = ''
    if (c_associated(node%ptr)) s = f_string(c_node_category(node%ptr))
  end function dftrace_node_category

  function dftrace_node_path(node) result(s)
    type(dftrace_node), intent(in) :: node
    character(len=:), allocatable :: s
    s = ''
    if (c_associated(node%ptr)) s = f_string(c_node_path(node%ptr))
  end function dftrace_node_path

  subroutine enable_node(node)
    type(dftrace_node), intent(in) :: node
    if (c_associated(node%ptr)) call c_node_enable(node%ptr)
  end subroutine enable_node

  subroutine enable_path(path)
    character(*), intent(in) :: path
    call enable_node(node_from_path(path))
  end subroutine enable_path

  subroutine disable_node(node)
    type(dftrace_node), intent(in) :: node
    if (c_associated(node%ptr)) call c_node_disable(node%ptr)
  end subroutine disable_node

  subroutine disable_path(path)
    character(*), intent(in) :: path
    call disable_node(node_from_path(path))
  end subroutine disable_path

  logical function is_enabled_node(node)
    type(dftrace_node), intent(in) :: node
    is_enabled_node = .false.
    if (c_associated(node%ptr)) is_enabled_node = logical(c_node_is_enabled(node%ptr))
  end function is_enabled_node

  logical function is_enabled_path(path)
    character(*), intent(in) :: path
    is_enabled_path = is_enabled_node(node_from_path(path))
  end function is_enabled_path

  ! ------------------------------------------------------------------ arguments on nodes

  subroutine update_node(node, key, value)
    type(dftrace_node), intent(in) :: node
    character(*), intent(in) :: key
    class(*), intent(in) :: value
    if (c_associated(node%ptr)) call put_value(to_node, node%ptr, 0_dftrace_region_kind, key, value)
  end subroutine update_node

  subroutine update_path(path, key, value)
    character(*), intent(in) :: path
    character(*), intent(in) :: key
    class(*), intent(in) :: value
    call update_node(node_from_path(path), key, value)
  end subroutine update_path

  subroutine update_remove_node(node, key)
    type(dftrace_node), intent(in) :: node
    character(*), intent(in) :: key
    if (c_associated(node%ptr)) call c_node_update_remove(node%ptr, c_name(key))
  end subroutine update_remove_node

  subroutine update_remove_path(path, key)
    character(*), intent(in) :: path
    character(*), intent(in) :: key
    call update_remove_node(node_from_path(path), key)
  end subroutine update_remove_path

  ! ------------------------------------------------------------------ regions

  function region_begin_node(node, enable) result(r)
    type(dftrace_node), intent(in) :: node
    logical, intent(in), optional :: enable
    integer(dftrace_region_kind) :: r
    integer(c_int8_t), pointer, volatile :: active
    r = 0
    if (.not. c_associated(node%ptr)) return
    if (present(enable)) then
      r = c_region_begin_ex(node%ptr, merge(1_c_int, 0_c_int, enable), c_null_ptr, 0_c_size_t)
    else
      ! The first byte of a node is its "recording now" flag (a promise of dftrace.h, which
      ! dftrace_node_active_fast reads the same way): a disabled region costs one load here.
      call c_f_pointer(node%ptr, active)
      if (active /= 0) r = c_region_begin(node%ptr)
    end if
  end function region_begin_node

  function region_begin_path(path, enable) result(r)
    character(*), intent(in) :: path
    logical, intent(in), optional :: enable
    integer(dftrace_region_kind) :: r
    r = region_begin_node(node_from_path(path), enable)
  end function region_begin_path

  !> Ends a region begun on this thread and writes its event. 0 is allowed (does nothing).
  subroutine dftrace_region_end(region)
    integer(dftrace_region_kind), intent(in) :: region
    if (region /= 0) call c_region_end(region)
  end subroutine dftrace_region_end

  !> Drops a region without writing it.
  subroutine dftrace_region_cancel(region)
    integer(dftrace_region_kind), intent(in) :: region
    if (region /= 0) call c_region_cancel(region)
  end subroutine dftrace_region_cancel

  !> Adds or replaces a per-use argument of an open region of this thread.
  subroutine dftrace_region_arg(region, key, value)
    integer(dftrace_region_kind), intent(in) :: region
    character(*), intent(in) :: key
    class(*), intent(in) :: value
    character(kind=c_char, len=small_len + 1) :: kbuf
    logical :: ok
    if (region == 0) return
    ! put_value's key buffering, inlined: one call less on the hot path (about 20 instructions).
    call to_c(key, kbuf, .true., ok)
    if (ok) then
      call put_keyed(to_region, c_null_ptr, region, kbuf, key, value)
    else
      call put_keyed(to_region, c_null_ptr, region, c_name(key), key, value)
    end if
  end subroutine dftrace_region_arg

  ! ------------------------------------------------------------------ iter loops

  subroutine iter_begin_node(it, node, include_iter, include_block, iter_name, block_name, enable)
    type(dftrace_iter), intent(inout) :: it
    type(dftrace_node), intent(in) :: node
    logical, intent(in), optional :: include_iter, include_block
    character(*), intent(in), optional :: iter_name, block_name
    logical, intent(in), optional :: enable
    character(kind=c_char), allocatable, target :: iname(:), bname(:)
    integer(c_int32_t) :: flags
    integer(c_int) :: on
    type(c_ptr) :: ip, bp
    flags = 0
    if (present(include_iter)) then
      if (.not. include_iter) flags = ior(flags, 1_c_int32_t)  ! DFTRACE_ITER_NO_ITER
    end if
    if (present(include_block)) then
      if (.not. include_block) flags = ior(flags, 2_c_int32_t) ! DFTRACE_ITER_NO_BLOCK
    end if
    ip = c_null_ptr
    bp = c_null_ptr
    if (present(iter_name)) then
      call c_array(iter_name, iname)
      ip = c_loc(iname)
    end if
    if (present(block_name)) then
      call c_array(block_name, bname)
      bp = c_loc(bname)
    end if
    on = -1_c_int
    if (present(enable)) on = merge(1_c_int, 0_c_int, enable)
    call c_iter_begin(it, node%ptr, flags, ip, bp, on)
  end subroutine iter_begin_node

  subroutine iter_begin_path(it, path, include_iter, include_block, iter_name, block_name, enable)
    type(dftrace_iter), intent(inout) :: it
    character(*), intent(in) :: path
    logical, intent(in), optional :: include_iter, include_block
    character(*), intent(in), optional :: iter_name, block_name
    logical, intent(in), optional :: enable
    call iter_begin_node(it, node_from_path(path), include_iter, include_block, iter_name, &
                         block_name, enable)
  end subroutine iter_begin_path

  !> Call before obtaining the next item: ends the previous block, begins an iter event.
  subroutine dftrace_iter_fetch(it)
    type(dftrace_iter), intent(inout) :: it
    call c_iter_fetch(it)
  end subroutine dftrace_iter_fetch

  !> Call once the item is obtained, before the body: ends the iter event, begins the block.
  subroutine dftrace_iter_body(it)
    type(dftrace_iter), intent(inout) :: it
    call c_iter_body(it)
  end subroutine dftrace_iter_body

  !> Call when the loop ends for any reason (also after exit): ends the open block, drops an
  !> iter event that produced no item. Idempotent.
  subroutine dftrace_iter_end(it)
    type(dftrace_iter), intent(inout) :: it
    call c_iter_end(it)
  end subroutine dftrace_iter_end

  ! ------------------------------------------------------------------ other events

  subroutine counter_node(node, series, value)
    type(dftrace_node), intent(in) :: node
    character(*), intent(in) :: series
    class(*), intent(in) :: value
    if (c_associated(node%ptr)) call put_value(to_counter, node%ptr, 0_dftrace_region_kind, series, value)
  end subroutine counter_node

  subroutine counter_path(path, series, value)
    character(*), intent(in) :: path
    character(*), intent(in) :: series
    class(*), intent(in) :: value
    call counter_node(node_from_path(path), series, value)
  end subroutine counter_path

  subroutine instant_node(node)
    type(dftrace_node), intent(in) :: node
    if (c_associated(node%ptr)) call c_instant(node%ptr, c_null_ptr, 0_c_size_t)
  end subroutine instant_node

  subroutine instant_path(path)
    character(*), intent(in) :: path
    call instant_node(node_from_path(path))
  end subroutine instant_path

  subroutine mark_start_node(node)
    type(dftrace_node), intent(in) :: node
    if (c_associated(node%ptr)) call c_mark_start(node%ptr)
  end subroutine mark_start_node

  subroutine mark_start_path(path)
    character(*), intent(in) :: path
    call mark_start_node(node_from_path(path))
  end subroutine mark_start_path

  subroutine mark_end_node(node)
    type(dftrace_node), intent(in) :: node
    if (c_associated(node%ptr)) call c_mark_end(node%ptr)
  end subroutine mark_end_node

  subroutine mark_end_path(path)
    character(*), intent(in) :: path
    call mark_end_node(node_from_path(path))
  end subroutine mark_end_path

  !> A custom metadata line: {"name":"CM",...,"args":{"name":key,"value":value}}.
  subroutine dftrace_metadata(key, value)
    character(*), intent(in) :: key, value
    call c_metadata(c_name(key), c_value(value))
  end subroutine dftrace_metadata

  !> A process property line (PR) with a character or integer value.
  subroutine dftrace_process_property(key, value)
    character(*), intent(in) :: key
    class(*), intent(in) :: value
    select type (value)
    type is (integer(int32))
      call c_property_int(c_name(key), int(value, c_int64_t))
    type is (integer(int64))
      call c_property_int(c_name(key), int(value, c_int64_t))
    type is (character(*))
      call c_property_string(c_name(key), c_value(value))
    class default
      call warn_type('dftrace_process_property', key)
    end select
  end subroutine dftrace_process_property

  !> Names the calling thread in the trace.
  subroutine dftrace_thread_name(name)
    character(*), intent(in) :: name
    call c_thread_name(c_name(name))
  end subroutine dftrace_thread_name

  !> The MPI rank and world size of this process (PR lines, process name, file name).
  subroutine dftrace_set_rank(rank, size, status)
    integer, intent(in) :: rank, size
    integer, intent(out), optional :: status
    integer(c_int) :: st
    st = c_set_rank(int(rank, c_int), int(size, c_int))
    if (present(status)) status = int(st)
  end subroutine dftrace_set_rank

  !> DFTracer's hash of a string, with its HH/SH/FH definition line written once per file.
  !> The value is the C uint64_t's bits in an integer(8) (it may print as negative).
  function dftrace_hash_define(kind, value) result(h)
    integer, intent(in) :: kind
    character(*), intent(in) :: value
    integer(int64) :: h
    h = c_hash_define(int(kind, c_int), c_value(value))
  end function dftrace_hash_define

  function dftrace_events_written() result(k)
    integer(int64) :: k
    k = c_events_written()
  end function dftrace_events_written

  function dftrace_events_dropped() result(k)
    integer(int64) :: k
    k = c_events_dropped()
  end function dftrace_events_dropped

end module dftrace
